// A chat request turned into an A2A call (docs/a2a.md, "What maps to what"): the JSON-RPC
// body, the headers an A2A server routes on, and what the relays need to read the answer.
import { randomUUID } from 'node:crypto';
import { GatewayError } from '../../errors.js';
import type { ChatRoute } from '../../request/chat-route.js';
import type { A2aCard } from './a2a-card.js';
import { A2A_VERSION_HEADER, encodeSendRequest, type A2aChatInput, type A2aVersion } from './a2a-protocol.js';

/** What the exchange keeps for the A2A relays. */
export interface A2aExchange {
  version: A2aVersion;
  /** The call is a streaming send (the stream route on an agent whose card says it streams). */
  streaming: boolean;
  /** The JSON-RPC id the call was sent with: every answer and event must carry it back. */
  rpcId: string;
}

/** A task id is the agent's own; this bounds what a client may send back as one. */
const MAX_TASK_ID_CHARS = 256;

type Json = Record<string, unknown>;

/** The chat request's fields as the A2A message carries them; the body was validated by the chat route. */
export function a2aChatInput(body: Json): A2aChatInput {
  const context = (body.context ?? {}) as Json;
  const taskId = context.task_id;
  if (taskId !== undefined && (typeof taskId !== 'string' || taskId.length === 0 || taskId.length > MAX_TASK_ID_CHARS)) {
    throw new GatewayError('invalid_request', { param: 'context.task_id', message: `"context.task_id" must be a string of 1 to ${MAX_TASK_ID_CHARS} characters.` });
  }
  const metadata: Json = {};
  if (typeof context.user_id === 'string') metadata.user_id = context.user_id;
  for (const name of ['tools', 'temperature', 'max_tokens'] as const) if (body[name] !== undefined) metadata[name] = body[name];
  return {
    message: body.message as string,
    contextId: typeof context.session_id === 'string' ? context.session_id : undefined,
    taskId: taskId as string | undefined,
    metadata,
  };
}

/**
 * The A2A call for a chat request: the body replaces the client's, and the headers (the
 * gateway's upstream headers, traceparent last) gain the version and what the answer may be.
 */
export function a2aCall(body: Json, card: A2aCard, route: ChatRoute, headers: string[]): { exchange: A2aExchange; body: Buffer; headers: string[] } {
  const streaming = route === 'chat/stream' && card.streaming;
  const rpcId = randomUUID();
  const encoded = encodeSendRequest(card.version, streaming, a2aChatInput(body), randomUUID(), rpcId);
  const out: string[] = [];
  // The client's Accept was for the gateway's answer, not the agent's.
  for (let i = 0; i < headers.length - 2; i += 2) if (headers[i] !== 'accept') out.push(headers[i]!, headers[i + 1]!);
  out.push('accept', streaming ? 'text/event-stream' : 'application/json', A2A_VERSION_HEADER, card.version, headers[headers.length - 2]!, headers[headers.length - 1]!);
  return { exchange: { version: card.version, streaming, rpcId }, body: encoded, headers: out };
}
