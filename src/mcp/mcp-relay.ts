// Relaying an MCP server's answer to the client (docs/mcp.md "Streams"). Most answers pass
// through unbuffered, chunk by chunk as they arrive (SSE progress included), with the client's
// backpressure held; the front door only watches them for the response to one request id (a
// `tools/call`'s isError, for its audit record). `tools/list` and `prompts/list` answers are the
// exception: read whole (bounded) and filtered to what the caller may see before a byte is sent.
// On the aggregated endpoint an SSE answer is relayed event by event instead (each event as soon
// as it is whole), so the ids of the server's own requests can be rewritten (EventRewrite).
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { decodeMessage, type JsonRpcId, type JsonRpcResponse } from './json-rpc.js';
import { jsonRpcRefusal } from './mcp-answers.js';
import { SseMessageScanner, type SseEvent } from './sse-messages.js';

/** What one relay saw. */
export interface RelayOutcome {
  bytesOut: number;
  /** The watched request's response: its result's isError; null when no such response was seen. */
  isError: boolean | null;
  /** The watched response was an error (JSON-RPC error object). */
  errored: boolean;
  /** The client left before the upstream's answer ended. */
  clientClosed: boolean;
  /** The upstream's answer broke off (reset, idle deadline). */
  upstreamFailed: boolean;
}

const MAX_WATCHED_BYTES = 1024 * 1024;

/** How an SSE answer's events are rewritten before they reach the client (the aggregated endpoint's request ids). */
export interface EventRewrite {
  /** The event's text as the client gets it (blank line included). */
  event(event: SseEvent): string;
  /** An event larger than this cannot be rewritten: the relay is cut, as for an upstream that broke off. */
  maxEventBytes: number;
}

function isSse(contentType: string | undefined): boolean {
  return contentType !== undefined && contentType.toLowerCase().startsWith('text/event-stream');
}

function responseOf(text: string, id: JsonRpcId): JsonRpcResponse | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  try {
    const message = decodeMessage(value);
    return message.kind === 'response' && message.id === id ? message : undefined;
  } catch {
    return undefined;
  }
}

/** Relays `body` as it arrives; resolves when it ended, broke off, or the client left. */
export function relayUnbuffered(body: Readable, res: ServerResponse, contentType: string | undefined, watchId: JsonRpcId | undefined, rewrite?: EventRewrite): Promise<RelayOutcome> {
  const outcome: RelayOutcome = { bytesOut: 0, isError: null, errored: false, clientClosed: false, upstreamFailed: false };
  const see = (response: JsonRpcResponse | undefined) => {
    if (response === undefined) return;
    if (response.error !== undefined) outcome.errored = true;
    const result = response.result as { isError?: unknown } | undefined;
    outcome.isError = typeof result === 'object' && result !== null && result.isError === true;
  };
  const sse = isSse(contentType);
  const rewriting = rewrite !== undefined && sse;
  const scanner = watchId !== undefined && sse && !rewriting ? new SseMessageScanner((event: SseEvent) => see(responseOf(event.data, watchId)), MAX_WATCHED_BYTES) : undefined;
  let blocked = false;
  let cut = false;
  const rewriter = rewriting
    ? new SseMessageScanner(
        (event: SseEvent) => {
          if (watchId !== undefined) see(responseOf(event.data, watchId));
          const text = rewrite.event(event);
          if (text === '') return;
          outcome.bytesOut += Buffer.byteLength(text);
          if (!res.write(text)) blocked = true;
        },
        rewrite.maxEventBytes,
        () => {
          cut = true;
        },
      )
    : undefined;
  const copy: Buffer[] | undefined = watchId !== undefined && !sse ? [] : undefined;
  let copied = 0;
  return new Promise((resolve) => {
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      res.off('close', onClose);
      if (copy !== undefined && watchId !== undefined && copied <= MAX_WATCHED_BYTES && copy.length > 0) see(responseOf(Buffer.concat(copy).toString('utf8'), watchId));
      resolve(outcome);
    };
    const onData = (chunk: Buffer) => {
      if (rewriter !== undefined) {
        rewriter.push(chunk);
        if (cut) body.destroy(new Error('An event is larger than the gateway can rewrite.'));
        else if (blocked) {
          blocked = false;
          body.pause();
          res.once('drain', () => body.resume());
        }
        return;
      }
      outcome.bytesOut += chunk.length;
      scanner?.push(chunk);
      if (copy !== undefined && copied <= MAX_WATCHED_BYTES) {
        copied += chunk.length;
        if (copied <= MAX_WATCHED_BYTES) copy.push(chunk);
      }
      if (!res.write(chunk)) {
        body.pause();
        res.once('drain', () => body.resume());
      }
    };
    const onClose = () => {
      if (res.writableFinished) return;
      outcome.clientClosed = true;
      body.destroy();
      settle();
    };
    body.on('data', onData);
    body.once('end', () => {
      res.end();
      settle();
    });
    body.once('error', () => {
      if (settled) return;
      outcome.upstreamFailed = true;
      // Headers are out: the only honest signal left is a cut connection.
      res.destroy();
      settle();
    });
    res.on('close', onClose);
  });
}

/** The whole body, or a 502 refusal past `maxBytes` (a hostile server's endless list). */
export async function readAnswer(body: Readable, maxBytes: number, id: JsonRpcId): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > maxBytes) {
      body.destroy();
      throw jsonRpcRefusal(502, id, 'internal_error', "The MCP server's answer is larger than the gateway accepts (mcp.max_response).", { outcome: 'upstream_error' });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, length);
}

/**
 * The answer with the response to `id` rewritten by `rewrite` (its result), as JSON or as SSE
 * events in their order; everything else in it as the server sent it.
 */
export function rewriteAnswer(answer: Buffer, contentType: string | undefined, id: JsonRpcId, rewrite: (result: unknown) => unknown): string {
  const rewriteText = (text: string): string => {
    const response = responseOf(text, id);
    if (response === undefined || response.error !== undefined) return text;
    return JSON.stringify({ jsonrpc: '2.0', id, result: rewrite(response.result) });
  };
  if (!isSse(contentType)) return rewriteText(answer.toString('utf8'));
  let out = '';
  const scanner = new SseMessageScanner((event) => {
    if (event.id !== undefined) out += `id: ${event.id}\n`;
    if (event.event !== undefined) out += `event: ${event.event}\n`;
    // A priming event's reconnection delay is the server's to set (SEP-1699), not lost in the rewrite.
    if (event.retry !== undefined) out += `retry: ${event.retry}\n`;
    for (const line of rewriteText(event.data).split('\n')) out += `data: ${line}\n`;
    out += '\n';
  }, answer.length + 1);
  scanner.push(answer);
  scanner.push(Buffer.from('\n\n'));
  return out;
}

/** The response to `id` in a whole answer (JSON, or SSE events in their order); undefined when it holds none. */
export function responseIn(answer: Buffer, contentType: string | undefined, id: JsonRpcId): JsonRpcResponse | undefined {
  if (!isSse(contentType)) return responseOf(answer.toString('utf8'), id);
  let found: JsonRpcResponse | undefined;
  const scanner = new SseMessageScanner((event) => {
    found ??= responseOf(event.data, id);
  }, answer.length + 1);
  scanner.push(answer);
  scanner.push(Buffer.from('\n\n'));
  return found;
}
