// The request pipeline's tracing (docs/observability.md): one per gateway, present only when
// telemetry is on. `begin` continues the client's W3C trace context (or starts a trace) with
// the server span, and hands a sampled request its RequestSpans; `end` closes them when the
// response closes. Off, the pipeline holds none and pays a property check per stage.
import { defaultTextMapGetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Context, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { RequestState } from '../request/request-state.js';
import { RequestSpans } from './request-spans.js';
import { SPAN_NAME } from './span-attributes.js';

/** What the request's log line and its runner see of the trace (src/proxy/traceparent.ts has the same shape). */
export interface TraceStart {
  traceparent: string;
  traceId: string;
}

const propagator = new W3CTraceContextPropagator();

/** One MCP request's span: what the upstream is sent as its parent, and the end. */
export interface McpSpan {
  traceparent: string;
  end(status: number, outcome: string): void;
}

export class RequestTracing {
  constructor(
    private readonly tracer: Tracer,
    private readonly includeUserId: boolean,
  ) {}

  /**
   * The server span, a child of the client's `traceparent` when it sent a valid one. A sampled
   * request gets its RequestSpans (`state.trace`); an unsampled one only carries the trace on,
   * with the sampled flag off, so the runner does not record what the gateway did not.
   */
  begin(incoming: string | string[] | undefined, state: RequestState): TraceStart {
    const parent = typeof incoming === 'string' ? clientContext(incoming) : ROOT_CONTEXT;
    // Named for the agent once the route is known (RequestSpans.end).
    const span = this.tracer.startSpan(SPAN_NAME, { kind: SpanKind.SERVER }, parent);
    const context = span.spanContext();
    if (span.isRecording()) state.trace = new RequestSpans(this.tracer, span, state, this.includeUserId);
    return { traceparent: `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`, traceId: context.traceId };
  }

  /**
   * An MCP front door request's server span (docs/mcp.md "Traces"), named and attributed by the
   * OpenTelemetry MCP conventions: `{mcp.method.name} {target}`, the method, protocol revision,
   * session, JSON-RPC id and, for a tool call, `gen_ai.tool.name` with `gen_ai.operation.name`
   * = `execute_tool`. Never arguments or results. The traceparent is what the server is sent.
   */
  mcpSpan(incoming: string | string[] | undefined, method: string, target: string | undefined, attributes: Record<string, string | number>): McpSpan {
    const parent = typeof incoming === 'string' ? clientContext(incoming) : ROOT_CONTEXT;
    const span = this.tracer.startSpan(target === undefined ? method : `${method} ${target}`, { kind: SpanKind.SERVER, attributes: { 'mcp.method.name': method, ...attributes } }, parent);
    const context = span.spanContext();
    return {
      traceparent: `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`,
      end(status, outcome) {
        span.setAttribute('http.response.status_code', status);
        span.setAttribute('agentgw.outcome', outcome);
        if (outcome !== 'ok') {
          span.setAttribute('error.type', outcome);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }

  /** The response closed (status as sent, or 499): the request's spans end. */
  end(state: RequestState, status: number, outcome: string): void {
    (state.trace as RequestSpans).end(status, outcome);
  }
}

function clientContext(traceparent: string): Context {
  return propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter);
}
