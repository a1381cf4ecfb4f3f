// What a traced request's answer tells its span (docs/observability.md "Attributes"): the
// model, the tool calls by name, and a split of the tokens when the runner gives one. Read
// only for a sampled request (the relays check `state.trace` first), so JSON.parse here
// costs nothing on an untraced request. Whatever the runner sends, only strings and
// integers of the expected shape are taken; tool inputs and outputs are never read.
import type { RequestTrace } from '../request/request-trace.js';

/** More tool calls than this in one answer are not each recorded (the span's event limit would drop them anyway). */
const MAX_TOOL_CALLS = 64;

/** A `/chat` answer's bytes, as the JSON relay kept them. */
export function traceJsonAnswer(trace: RequestTrace, chunks: readonly Buffer[], length: number): void {
  const answer = parseObject(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, length).toString('utf8'));
  if (answer === undefined) return;
  const metadata = objectOrUndefined(answer.metadata);
  if (metadata !== undefined) traceGeneration(trace, metadata);
  const calls = answer.tool_calls;
  if (!Array.isArray(calls)) return;
  const count = Math.min(calls.length, MAX_TOOL_CALLS);
  for (let i = 0; i < count; i++) {
    const tool = objectOrUndefined(calls[i])?.tool;
    if (typeof tool === 'string') trace.toolCall(tool);
  }
}

/** A stream's `done` event data: its model and token split, when it names them. */
export function traceDoneEvent(trace: RequestTrace, data: string): void {
  const done = parseObject(data);
  if (done !== undefined) traceGeneration(trace, done);
}

/** A stream's `tool_call` event data (docs/streaming.md): its `tool` name. */
export function traceToolCallEvent(trace: RequestTrace, data: string): void {
  const tool = parseObject(data)?.tool;
  if (typeof tool === 'string') trace.toolCall(tool);
}

function traceGeneration(trace: RequestTrace, facts: Record<string, unknown>): void {
  if (typeof facts.model === 'string' && facts.model.length > 0) trace.responseModel(facts.model);
  const input = count(facts.input_tokens);
  const output = count(facts.output_tokens);
  if (input !== null || output !== null) trace.usageSplit(input, output);
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    return objectOrUndefined(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function objectOrUndefined(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
