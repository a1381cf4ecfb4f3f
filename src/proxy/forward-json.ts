// POST /chat: forward the validated body bytes, relay status, headers and body as they come.
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { AgentConfig } from '../config/schema.js';
import { GatewayError } from '../http/errors.js';
import type { RequestState } from '../http/request-state.js';
import { metrics } from '../metrics/metrics.js';
import { forEachRelayedHeader } from './header-hygiene.js';
import { AGENT_RETRY_AFTER_SECONDS, classifyUpstreamError, outcomeForFailure } from './upstream-errors.js';
import type { UpstreamTarget } from './upstream-pools.js';

/** Bodies up to this size are kept (by reference) to read `metadata.tokens_used` afterwards. */
const MAX_TOKEN_SCAN_BYTES = 1024 * 1024;

export interface ForwardRequest {
  res: ServerResponse;
  state: RequestState;
  agent: AgentConfig;
  target: UpstreamTarget;
  headers: Record<string, string | string[]>;
  body: Buffer;
  idleTimeoutMs: number;
}

function setRelayedHeader(this: ServerResponse, name: string, value: string | string[]): void {
  this.setHeader(name, value);
}

/** Calls the upstream; a failure before its headers becomes 503 agent_unavailable. */
export async function requestUpstream(request: ForwardRequest, path: string, signal: AbortSignal, bodyTimeoutMs: number): Promise<Dispatcher.ResponseData | undefined> {
  const { state, agent } = request;
  state.upstreamStartMs = performance.now();
  try {
    return await request.target.pool.request({
      method: 'POST',
      path,
      headers: request.headers,
      body: request.body,
      headersTimeout: agent.headersTimeoutMs,
      bodyTimeout: bodyTimeoutMs,
      signal,
    });
  } catch (error) {
    state.upstreamEndMs = performance.now();
    if (signal.aborted) {
      state.outcome = 'client_closed';
      return undefined;
    }
    const failure = classifyUpstreamError(error);
    state.failureKind = failure.kind;
    state.outcome = outcomeForFailure(failure.kind);
    metrics.upstreamErrors.inc({ agent: agent.id, kind: failure.kind });
    throw new GatewayError('agent_unavailable', { retryAfterSeconds: AGENT_RETRY_AFTER_SECONDS });
  }
}

export async function forwardJson(request: ForwardRequest): Promise<void> {
  const { res, state, agent } = request;
  const controller = new AbortController();
  const abortIfUnfinished = (): void => {
    if (!res.writableFinished) controller.abort();
  };
  res.once('close', abortIfUnfinished);

  const upstream = await requestUpstream(request, request.target.chatPath, controller.signal, request.idleTimeoutMs);
  if (!upstream) return;

  await forwardJsonBody(request, upstream, controller);
}

/** Relays an upstream answer (status, headers, body) as it comes, reading tokens on the side. */
export async function forwardJsonBody(request: ForwardRequest, upstream: Dispatcher.ResponseData, controller: AbortController): Promise<void> {
  const { res, state, agent } = request;
  res.statusCode = upstream.statusCode;
  forEachRelayedHeader(upstream.headers, setRelayedHeader.bind(res));
  const contentType = upstream.headers['content-type'];
  const scanTokens = upstream.statusCode < 300 && typeof contentType === 'string' && contentType.includes('json');
  const kept: Buffer[] | undefined = scanTokens ? [] : undefined;
  let keptBytes = 0;

  try {
    for await (const chunk of upstream.body as AsyncIterable<Buffer>) {
      state.bytesOut += chunk.length;
      if (kept && keptBytes + chunk.length <= MAX_TOKEN_SCAN_BYTES) {
        kept.push(chunk);
        keptBytes += chunk.length;
      }
      if (!res.write(chunk)) await waitForDrain(res);
    }
  } catch (error) {
    state.upstreamEndMs = performance.now();
    if (controller.signal.aborted || res.destroyed) {
      state.outcome = 'client_closed';
      return;
    }
    // Headers are out: the only honest signal left is to cut the connection.
    const failure = classifyUpstreamError(error);
    state.failureKind = failure.kind;
    state.outcome = outcomeForFailure(failure.kind);
    metrics.upstreamErrors.inc({ agent: agent.id, kind: failure.kind });
    res.destroy();
    return;
  }
  state.upstreamEndMs = performance.now();
  res.end();
  if (kept && keptBytes === state.bytesOut) state.tokensUsed = tokensFromChatResponse(kept, keptBytes);
}

function waitForDrain(res: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    const onDrain = (): void => {
      res.off('close', onClose);
      resolve();
    };
    const onClose = (): void => {
      res.off('drain', onDrain);
      reject(new Error('client closed while the gateway waited to write'));
    };
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

function tokensFromChatResponse(chunks: Buffer[], length: number): number | null {
  try {
    const parsed: unknown = JSON.parse((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length)).toString('utf8'));
    const tokens = (parsed as { metadata?: { tokens_used?: unknown } } | null)?.metadata?.tokens_used;
    return typeof tokens === 'number' && Number.isInteger(tokens) && tokens >= 0 ? tokens : null;
  } catch {
    return null;
  }
}
