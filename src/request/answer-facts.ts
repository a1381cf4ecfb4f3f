// What an answer names besides its token count (docs/design.md, "Agent-aware policy"): the
// model and the tools called. One rule for every way an answer arrives (a `/chat` body, a
// stream's `done` and `tool_call` events), so the audit, the metrics and the quotas agree.
// Only names of a bounded size are taken: they become audit fields and metric labels.

/** The most tool calls one answer records; later calls are not recorded (decision 0066). */
export const MAX_TOOL_CALLS_RECORDED = 128;
/** A longer tool name is not a tool name this gateway records. */
export const MAX_TOOL_NAME_CHARS = 64;
/** A longer model name is not recorded (the answer counts as naming none); as config's model names. */
export const MAX_ANSWER_MODEL_CHARS = 128;

/** Where a relay puts what it reads (RequestState is one). */
export interface AnswerFacts {
  model: string | null;
  toolCalls: string[] | null;
}

/** A model name worth recording: a string of 1 to MAX_ANSWER_MODEL_CHARS characters, else null. */
export function answerModel(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ANSWER_MODEL_CHARS ? value : null;
}

/** A tool name worth recording: a string of 1 to MAX_TOOL_NAME_CHARS characters. */
export function isToolName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_TOOL_NAME_CHARS;
}

/** Records one call of `tool` (a valid name) unless the answer's record is full. */
export function recordToolCall(facts: AnswerFacts, tool: string): void {
  const calls = facts.toolCalls;
  if (calls === null) facts.toolCalls = [tool];
  else if (calls.length < MAX_TOOL_CALLS_RECORDED) calls.push(tool);
}
