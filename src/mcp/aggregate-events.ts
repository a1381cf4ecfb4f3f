// What a server's SSE events become on the aggregated endpoint (docs/mcp.md "The aggregated
// endpoint"): a request of the server's own (sampling, elicitation, roots, ping) gets an id that
// names the server (aggregate-request-ids.ts), so the client's answer can be routed back; every
// other message passes as the server sent it. Event ids are not passed: several servers' streams
// share the client's, and `/mcp` offers no resumption (Last-Event-ID), so an id would promise
// what the gateway cannot keep. Events without data (a stream's priming event) are dropped.
import { encodeUpstreamRequestId } from './aggregate-request-ids.js';
import type { EventRewrite } from './mcp-relay.js';
import type { SseEvent } from './sse-messages.js';

function withRequestIdOf(server: string, data: string): string {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return data;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return data;
  const message = value as Record<string, unknown>;
  const id = message.id;
  if (typeof message.method !== 'string' || !(typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))) return data;
  return JSON.stringify({ ...message, id: encodeUpstreamRequestId(server, id) });
}

/** The event as the client gets it from `server` through `/mcp`. */
export function aggregateEventText(server: string, event: SseEvent): string {
  if (event.data === '') return '';
  let out = event.event === undefined ? '' : `event: ${event.event}\n`;
  for (const line of withRequestIdOf(server, event.data).split('\n')) out += `data: ${line}\n`;
  return `${out}\n`;
}

export function aggregateEventRewrite(server: string, maxEventBytes: number): EventRewrite {
  return { maxEventBytes, event: (event) => aggregateEventText(server, event) };
}
