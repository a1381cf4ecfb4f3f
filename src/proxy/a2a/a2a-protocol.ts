// The A2A wire protocol as the gateway speaks it (docs/a2a.md): one encoder per request it
// sends (send, streaming send, cancel) and one typed decoder for what comes back (a JSON-RPC
// answer, or one event of a streaming send), for the two versions an agent card may declare:
// A2A 1.0 (`SendMessage`, proto-JSON shapes: `{task: …}`, `TASK_STATE_COMPLETED`, `{text}`
// parts) and 0.3 (`message/send`, `kind`-tagged shapes: `completed`, `{kind: 'text', text}`).
// The decoders take anything: an agent's answer is untrusted input.
import { isTokenCount } from '../../audit/audit-record.js';

export type A2aVersion = '1.0' | '0.3';

/** The header an A2A 1.0 server routes on (without it the official SDK assumes 0.3). */
export const A2A_VERSION_HEADER = 'a2a-version';

/** A chat request as the A2A message carries it (validated by the chat route first). */
export interface A2aChatInput {
  message: string;
  /** context.session_id: the A2A contextId, as given. */
  contextId: string | undefined;
  /** context.task_id: continues a task that asked for input. */
  taskId: string | undefined;
  /** Message metadata: user_id, tools, temperature, max_tokens (those present). */
  metadata: Record<string, unknown>;
}

export type A2aTaskState = 'submitted' | 'working' | 'completed' | 'failed' | 'canceled' | 'rejected' | 'input-required' | 'auth-required' | 'unknown';

/** One decoded result: a Task, a Message, a status update or an artifact update. */
export interface A2aUpdate {
  kind: 'task' | 'message' | 'status' | 'artifact';
  taskId: string | null;
  contextId: string | null;
  /** The task's state; null for a Message and an artifact update. */
  state: A2aTaskState | null;
  /** The text parts it carries, joined (a task: its artifacts', else its status message's). */
  text: string;
  model: string | null;
  /** `tokens_used` from its metadata: an integer from 0 to 10,000,000 (isTokenCount), else null. */
  tokensUsed: number | null;
}

export type A2aAnswer = { ok: true; update: A2aUpdate } | { ok: false; problem: 'rpc_error' | 'malformed'; code: number | null };

/** States that end a task with no answer: the gateway answers them as errors. */
export function isFailedState(state: A2aTaskState | null): boolean {
  return state === 'failed' || state === 'rejected' || state === 'canceled';
}

/** States that pause a task for the client: the answer names the task to continue. */
export function isInterruptedState(state: A2aTaskState | null): boolean {
  return state === 'input-required' || state === 'auth-required';
}

const METHODS = {
  '1.0': { send: 'SendMessage', stream: 'SendStreamingMessage', cancel: 'CancelTask' },
  '0.3': { send: 'message/send', stream: 'message/stream', cancel: 'tasks/cancel' },
} as const;

/** The JSON-RPC method of the send (or streaming send), as a traced attempt names it. */
export function sendMethod(version: A2aVersion, streaming: boolean): string {
  return streaming ? METHODS[version].stream : METHODS[version].send;
}

/** The send (or streaming send) of one user message with a fresh messageId. */
export function encodeSendRequest(version: A2aVersion, streaming: boolean, input: A2aChatInput, messageId: string, rpcId: string): Buffer {
  const v1 = version === '1.0';
  const message: Record<string, unknown> = v1
    ? { messageId, role: 'ROLE_USER', parts: [{ text: input.message }] }
    : { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text: input.message }] };
  if (input.contextId !== undefined) message.contextId = input.contextId;
  if (input.taskId !== undefined) message.taskId = input.taskId;
  if (Object.keys(input.metadata).length > 0) message.metadata = input.metadata;
  // 0.3 leaves blocking to the server; /chat waits for the answer.
  const params = v1 || streaming ? { message } : { message, configuration: { blocking: true } };
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: rpcId, method: sendMethod(version, streaming), params }));
}

export function encodeCancelRequest(version: A2aVersion, taskId: string, rpcId: string): Buffer {
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: rpcId, method: METHODS[version].cancel, params: { id: taskId } }));
}

type Json = Record<string, unknown>;

function object(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
}

function string(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/**
 * Parses one JSON-RPC answer (a whole body, or one event's data) to the request whose id is
 * `rpcId`. An answer to another id is not an answer to this request: malformed (a bad
 * upstream answer). Only an error may carry a null id, as JSON-RPC 2.0 has a server answer
 * a request whose id it could not read.
 */
export function decodeAnswer(version: A2aVersion, text: string, rpcId: string): A2aAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { ok: false, problem: 'malformed', code: null };
  }
  const envelope = object(parsed);
  if (envelope === null || envelope.jsonrpc !== '2.0') return { ok: false, problem: 'malformed', code: null };
  const error = object(envelope.error);
  if (envelope.id !== rpcId && !(error !== null && envelope.id === null)) return { ok: false, problem: 'malformed', code: null };
  if (error !== null) return { ok: false, problem: 'rpc_error', code: typeof error.code === 'number' && Number.isInteger(error.code) ? error.code : null };
  const update = decodeResult(version, object(envelope.result));
  return update === null ? { ok: false, problem: 'malformed', code: null } : { ok: true, update };
}

function decodeResult(version: A2aVersion, result: Json | null): A2aUpdate | null {
  if (result === null) return null;
  if (version === '1.0') {
    if (object(result.task)) return decodeTask(version, object(result.task)!);
    if (object(result.message)) return decodeMessage(version, object(result.message)!);
    if (object(result.statusUpdate)) return decodeStatusUpdate(version, object(result.statusUpdate)!);
    if (object(result.artifactUpdate)) return decodeArtifactUpdate(version, object(result.artifactUpdate)!);
    return null;
  }
  switch (result.kind) {
    case 'task':
      return decodeTask(version, result);
    case 'message':
      return decodeMessage(version, result);
    case 'status-update':
      return decodeStatusUpdate(version, result);
    case 'artifact-update':
      return decodeArtifactUpdate(version, result);
    default:
      return null;
  }
}

function update(kind: A2aUpdate['kind'], source: Json, state: A2aTaskState | null, text: string, taskIdField: string): A2aUpdate {
  const metadata = object(source.metadata);
  return { kind, taskId: string(source[taskIdField]), contextId: string(source.contextId), state, text, model: string(metadata?.model) ?? null, tokensUsed: tokensOf(metadata) };
}

function decodeTask(version: A2aVersion, task: Json): A2aUpdate {
  const status = object(task.status);
  let text = '';
  if (Array.isArray(task.artifacts)) for (const artifact of task.artifacts) text += partsText(version, object(artifact)?.parts);
  if (text === '') text = partsText(version, object(status?.message)?.parts);
  return update('task', task, stateOf(version, status?.state), text, 'id');
}

function decodeMessage(version: A2aVersion, message: Json): A2aUpdate {
  return update('message', message, null, partsText(version, message.parts), 'taskId');
}

function decodeStatusUpdate(version: A2aVersion, event: Json): A2aUpdate {
  const status = object(event.status);
  return update('status', event, stateOf(version, status?.state), partsText(version, object(status?.message)?.parts), 'taskId');
}

function decodeArtifactUpdate(version: A2aVersion, event: Json): A2aUpdate {
  return update('artifact', event, null, partsText(version, object(event.artifact)?.parts), 'taskId');
}

/** Text parts joined; other parts (files, data) carry no text for the chat API. */
function partsText(version: A2aVersion, parts: unknown): string {
  if (!Array.isArray(parts)) return '';
  let text = '';
  for (const each of parts) {
    const part = object(each);
    if (part === null || (version === '0.3' && part.kind !== 'text')) continue;
    const value = string(part.text);
    if (value !== null) text += value;
  }
  return text;
}

const STATES_1_0: Record<string, A2aTaskState> = {
  TASK_STATE_SUBMITTED: 'submitted',
  TASK_STATE_WORKING: 'working',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_REJECTED: 'rejected',
  TASK_STATE_INPUT_REQUIRED: 'input-required',
  TASK_STATE_AUTH_REQUIRED: 'auth-required',
};

const STATES_0_3: ReadonlySet<string> = new Set(['submitted', 'working', 'completed', 'failed', 'canceled', 'rejected', 'input-required', 'auth-required']);

function stateOf(version: A2aVersion, state: unknown): A2aTaskState {
  if (typeof state !== 'string') return 'unknown';
  if (version === '1.0') return Object.hasOwn(STATES_1_0, state) ? STATES_1_0[state]! : 'unknown';
  return STATES_0_3.has(state) ? (state as A2aTaskState) : 'unknown';
}

/**
 * An agent's token count by the one rule every answer's count follows (isTokenCount: an
 * integer from 0 to 10,000,000), else unknown: what the client is shown is what the audit
 * record keeps and what is charged (an unknown count is estimated from the bytes relayed).
 */
function tokensOf(metadata: Json | null): number | null {
  const tokens = metadata?.tokens_used;
  return isTokenCount(tokens) ? tokens : null;
}
