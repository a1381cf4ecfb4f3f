// Side-parser for the upstream's Server-Sent Events. It reads the same Buffer chunks that
// are written to the client (it never holds a byte back) and reports whole events, so the
// gateway can count events, read `done.tokens_used` and, when asked, the `tool_call` events'
// data (the tool names the audit, the metrics and a trace take; docs/observability.md). Works on bytes: a multi-byte
// character or a CRLF split across chunks is handled. It reads the line grammar; an event's
// data lines are kept by SseEventData (sse-event-data.ts).
//
// Allocation-lean, because it runs on every relayed event: field names and the event names
// `done` and `tool_call` are matched byte by byte as they stream past.
import { MAX_LINE_BYTES, SseEventData } from './sse-event-data.js';

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

// The field of the line being read. Names are matched byte by byte (FIELD_NAMES[field]).
const F_NONE = 0; // no byte of the line seen yet
const F_EVENT = 1;
const F_DATA = 2;
const F_ID = 3;
const F_RETRY = 4;
const F_OTHER = 5; // a comment, or a field the gateway does not count
const FIELD_NAMES: readonly (readonly number[])[] = [[], [...'event'], [...'data'], [...'id'], [...'retry']].map((name) =>
  name.map((char) => char.charCodeAt(0)),
);
// The event names whose data is decoded: `done`, and `tool_call` only when asked.
const N_OTHER = 0;
const N_DONE = 1;
const N_TOOL_CALL = 2;
const DONE: readonly number[] = [...'done'].map((char) => char.charCodeAt(0));
const TOOL_CALL: readonly number[] = [...'tool_call'].map((char) => char.charCodeAt(0));
const T = 0x74;

// Where the line being read is.
const P_NAME = 0; // in the field name
const P_COLON = 1; // just past the colon of an `event` or `data` line: one space may follow
const P_VALUE = 2; // in the value of an `event` or `data` line
const P_SKIP = 3; // nothing more to learn from this line but its length

export interface SseEventSink {
  /**
   * Called once per dispatched event: with the event's data (its data lines joined with "\n")
   * when the event is named `done`, with null for any other event (its data is never decoded).
   */
  onEvent(doneData: string | null): void;
  /** A `tool_call` event's data, after its onEvent(null); called only by a parser made to read them. */
  onToolCall?(data: string): void;
}

export class SseSideParser {
  private lastByteWasCR = false;
  // The line being read.
  private lineBytes = 0;
  private phase = P_NAME;
  private field = F_NONE;
  /** Bytes of FIELD_NAMES[field] matched so far. */
  private nameMatched = 0;
  /** In an `event` value: the name it may be (chosen by its first byte), and bytes of it matched; -1 once it is neither. */
  private valueName = N_DONE;
  private valueMatched = 0;
  // The event being read.
  private hasFields = false;
  private eventName = N_OTHER;
  private readonly data = new SseEventData();
  /** True when the bytes seen so far end exactly at an event boundary (or nothing was seen). */
  atEventBoundary = true;
  /**
   * True when the bytes seen so far end at a line boundary where a line may be inserted. A
   * line ended by a bare CR is not one yet: an LF arriving next belongs to that CRLF, and a
   * line inserted before it would turn the LF into a blank line (dispatching the event early).
   */
  atLineBoundary = true;

  /** `readToolCalls`: decode `tool_call` events for sink.onToolCall (otherwise their data is never decoded). */
  constructor(
    private readonly sink: SseEventSink,
    private readonly readToolCalls = false,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    const length = chunk.length;
    for (let i = 0; i < length; i++) {
      const byte = chunk[i];
      if (byte !== LF && byte !== CR) continue;
      if (byte === LF && this.lastByteWasCR && i === start) {
        // The LF of a CRLF whose CR ended the previous line (possibly in the previous chunk).
        this.lastByteWasCR = false;
        this.atLineBoundary = true;
        start = i + 1;
        continue;
      }
      this.readLinePart(chunk, start, i);
      this.finishLine();
      this.lastByteWasCR = byte === CR;
      start = i + 1;
    }
    if (start < length) {
      this.readLinePart(chunk, start, length);
      this.lastByteWasCR = false;
      this.atLineBoundary = false;
      this.atEventBoundary = false;
    } else if (this.lastByteWasCR && !this.atEventBoundary) {
      this.atLineBoundary = false;
    }
  }

  /** Reads bytes from..to of the current line (a line may arrive in any number of parts). */
  private readLinePart(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return;
    // Nothing of a line is held here but a data line's value, and SseEventData bounds that
    // itself (a data line of any length is read, scanned past its bound); a line of another
    // field longer than MAX_LINE_BYTES is ignored when it ends.
    this.lineBytes += to - from;
    let at = from;
    if (this.phase === P_NAME) {
      at = this.readName(chunk, from, to);
      if (at === to) return;
    }
    if (this.phase === P_COLON) {
      if (chunk[at] === SPACE) at++;
      this.phase = P_VALUE;
      if (at === to) return;
    }
    if (this.phase !== P_VALUE) return;
    if (this.field === F_DATA) {
      this.data.append(chunk, at, to);
      return;
    }
    // An `event` value: only whether it is exactly "done" (or "tool_call", when asked) matters.
    // Its first byte picks the one name it may be, so the loop compares against one name, as
    // it did when `done` was the only one.
    let matched = this.valueMatched;
    if (matched === 0 && this.readToolCalls) this.valueName = chunk[at] === T ? N_TOOL_CALL : N_DONE;
    const expected = this.valueName === N_DONE ? DONE : TOOL_CALL;
    for (let i = at; i < to; i++) {
      if (matched < expected.length && chunk[i] === expected[matched]) {
        matched++;
      } else {
        matched = -1;
        this.phase = P_SKIP;
        break;
      }
    }
    this.valueMatched = matched;
  }

  /** Matches the field name against FIELD_NAMES; returns where the name's part in from..to ends. */
  private readName(chunk: Buffer, from: number, to: number): number {
    let field = this.field;
    let matched = this.nameMatched;
    for (let i = from; i < to; i++) {
      const byte = chunk[i]!;
      if (byte === COLON) {
        if (field === F_NONE || field === F_OTHER || matched !== FIELD_NAMES[field]!.length) field = F_OTHER;
        this.field = field;
        this.phase = field === F_EVENT || field === F_DATA ? P_COLON : P_SKIP;
        return i + 1;
      }
      if (field === F_NONE) {
        field = byte === 0x65 ? F_EVENT : byte === 0x64 ? F_DATA : byte === 0x69 ? F_ID : byte === 0x72 ? F_RETRY : F_OTHER;
        matched = 1;
      } else if (matched < FIELD_NAMES[field]!.length && byte === FIELD_NAMES[field]![matched]) {
        matched++;
      } else {
        field = F_OTHER;
      }
      if (field === F_OTHER) {
        this.field = F_OTHER;
        this.phase = P_SKIP;
        return to;
      }
    }
    this.field = field;
    this.nameMatched = matched;
    return to;
  }

  private finishLine(): void {
    const length = this.lineBytes;
    // A line ended inside its name ("data", "event"): that field with an empty value, if the name is whole.
    let field = this.field;
    if (this.phase === P_NAME && field !== F_NONE && this.nameMatched !== FIELD_NAMES[field]!.length) field = F_OTHER;
    const valueName = this.valueMatched === (this.valueName === N_DONE ? DONE : TOOL_CALL).length ? this.valueName : N_OTHER;
    this.lineBytes = 0;
    this.phase = P_NAME;
    this.field = F_NONE;
    this.nameMatched = 0;
    this.valueName = N_DONE;
    this.valueMatched = 0;
    this.atLineBoundary = true;
    if (length === 0) {
      this.dispatch();
      this.atEventBoundary = true;
      return;
    }
    this.atEventBoundary = false;
    // A line too long to be ours to read counts as nothing, unless it is a data line (read whatever its length).
    if (length <= MAX_LINE_BYTES || field === F_DATA) {
      if (field === F_EVENT) {
        this.eventName = valueName;
        this.hasFields = true;
      } else if (field === F_DATA) {
        this.data.endLine();
        this.hasFields = true;
      } else if (field === F_ID || field === F_RETRY) {
        this.hasFields = true;
      }
    }
  }

  private dispatch(): void {
    if (!this.hasFields) return;
    const name = this.eventName;
    const data = this.data.take(name !== N_OTHER);
    this.eventName = N_OTHER;
    this.hasFields = false;
    if (name === N_TOOL_CALL) {
      this.sink.onEvent(null);
      this.sink.onToolCall!(data!);
      return;
    }
    this.sink.onEvent(data);
  }
}
