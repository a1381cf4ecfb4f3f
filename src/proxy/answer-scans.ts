// What the gateway reads from an answer or event too large to hold (a `/chat` body over
// 1 MiB, a `tool_call` event over 64 KiB), read by the bounded streaming scan
// (json-stream-scan.ts) as the bytes pass: the tool calls (and a `/chat` answer's model), by
// the same rule as a held answer's (tokens-used.ts), so quotas, the metric and the audit record
// count them whatever the size (issue 45, H3-03). Facts are written only for a whole, valid
// JSON text, as JSON.parse would read them.
import { answerModel, isToolName, MAX_ANSWER_MODEL_CHARS, MAX_TOOL_CALLS_RECORDED, MAX_TOOL_NAME_CHARS, recordToolCall, type AnswerFacts } from '../request/answer-facts.js';
import { JsonStreamScan, type ScanPath, type ScanSink } from './json-stream-scan.js';

/** The most bytes of JSON string text a name of MAX chars can take (an escape \uXXXX is 6 bytes per UTF-16 unit). */
const TOOL_BYTES = MAX_TOOL_NAME_CHARS * 6;
const MODEL_BYTES = MAX_ANSWER_MODEL_CHARS * 6;

const TOOL_CALLS = 1;
const CALL = 2;
const TOOL = 3;
const METADATA = 4;
const MODEL = 5;

const CHAT_ANSWER: ScanPath = {
  keys: {
    tool_calls: { id: TOOL_CALLS, items: { id: CALL, keys: { tool: { id: TOOL, capture: TOOL_BYTES } } } },
    metadata: { id: METADATA, keys: { model: { id: MODEL, capture: MODEL_BYTES } } },
  },
};

const TOOL_CALL_EVENT: ScanPath = { keys: { tool: { id: TOOL, capture: TOOL_BYTES } } };

/** A `/chat` answer's `tool_calls[].tool` and `metadata.model`, the last of duplicate members as JSON.parse keeps. */
export class ChatAnswerScan implements ScanSink {
  private readonly scan = new JsonStreamScan(CHAT_ANSWER, this);
  private tools: string[] = [];
  private tool: string | null = null;
  private model: string | null = null;

  push(chunk: Uint8Array): void {
    this.scan.push(chunk);
  }

  /** The answer ended: its facts go to `facts` when it was valid JSON. */
  finishInto(facts: AnswerFacts): void {
    if (!this.scan.finish()) return;
    const model = answerModel(this.model);
    if (model !== null) facts.model = model;
    for (const tool of this.tools) recordToolCall(facts, tool);
  }

  matched(id: number): void {
    if (id === TOOL_CALLS) this.tools = [];
    else if (id === CALL || id === TOOL) this.tool = null;
    else if (id === METADATA || id === MODEL) this.model = null;
  }

  string(id: number, text: string | null): void {
    if (id === TOOL) this.tool = text;
    else this.model = text;
  }

  closed(id: number): void {
    if (id === CALL && isToolName(this.tool) && this.tools.length < MAX_TOOL_CALLS_RECORDED) this.tools.push(this.tool);
  }
}

/** A `tool_call` event's `tool`. */
export class ToolCallEventScan implements ScanSink {
  private readonly scan = new JsonStreamScan(TOOL_CALL_EVENT, this);
  private tool: string | null = null;

  push(chunk: Uint8Array): void {
    this.scan.push(chunk);
  }

  /** The event ended: its tool name, when its data was valid JSON naming one; else null. */
  finish(): string | null {
    return this.scan.finish() && isToolName(this.tool) ? this.tool : null;
  }

  matched(): void {
    this.tool = null;
  }

  string(_id: number, text: string | null): void {
    this.tool = text;
  }

  closed(): void {}
}
