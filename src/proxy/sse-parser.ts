// Side-parser for the upstream's Server-Sent Events. It reads the same Buffer chunks that
// are written to the client (it never holds a byte back) and reports whole events, so the
// gateway can count events and read `done.tokens_used`. Works on bytes: a multi-byte
// character or a CRLF split across chunks is handled.
//
// Allocation-lean, because it runs on every relayed event: field names and the name `done` are
// matched byte by byte as they stream past, and a data line is remembered as (chunk, from, to)
// in arrays reused across events, not sliced or copied. Since `event:` may follow `data:`,
// every event's data is remembered until the event ends, but only a `done` event's is decoded.

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

/** Data kept per event is capped: a hostile upstream cannot grow the parser without bound. */
const MAX_EVENT_DATA_BYTES = 64 * 1024;
const MAX_LINE_BYTES = 128 * 1024;
/**
 * An event's data lines are held as references to the chunks they arrived in. Past these
 * bounds (many data lines, or data spread over many large chunks) the lines are decoded into
 * strings instead, as the parser used to do for every line, so the chunks can be let go of.
 */
const MAX_KEPT_SEGMENTS = 64;
const MAX_RETAINED_CHUNK_BYTES = 256 * 1024;
/** A data line split over more chunks than this is copied into a buffer of its own. */
const MAX_LINE_SEGMENTS = 8;

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
const DONE: readonly number[] = [...'done'].map((char) => char.charCodeAt(0));

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
}

export class SseSideParser {
  private lastByteWasCR = false;
  // The line being read.
  private lineBytes = 0;
  private phase = P_NAME;
  private field = F_NONE;
  /** Bytes of FIELD_NAMES[field] matched so far. */
  private nameMatched = 0;
  /** In an `event` value: bytes of "done" matched so far. */
  private doneMatched = 0;
  /** In a `data` value: its bytes so far, and the buffer it is copied to once it spans many chunks. */
  private lineValueBytes = 0;
  private spill: Buffer | null = null;
  // The event being read.
  private hasFields = false;
  private nameIsDone = false;
  /** Segments of data values: segBufs[i] bytes segFrom[i]..segTo[i]; reused from event to event. */
  private readonly segBufs: (Buffer | null)[] = [];
  private readonly segFrom: number[] = [];
  private readonly segTo: number[] = [];
  private segCount = 0;
  /** First segment of the line being read; the segments before it belong to whole data lines. */
  private lineSegStart = 0;
  /** First segment of each whole data line of the event. */
  private readonly dataLineStarts: number[] = [];
  private dataLineCount = 0;
  /** Bytes of the whole data lines held as segments, and of the distinct chunks they reference. */
  private keptBytes = 0;
  private retainedBytes = 0;
  private lastRetained: Buffer | null = null;
  /** Once the event outgrew the segments: its data lines decoded, with their total length. */
  private settled: string[] | null = null;
  private settledLength = 0;
  /** True when the bytes seen so far end exactly at an event boundary (or nothing was seen). */
  atEventBoundary = true;
  /**
   * True when the bytes seen so far end at a line boundary where a line may be inserted. A
   * line ended by a bare CR is not one yet: an LF arriving next belongs to that CRLF, and a
   * line inserted before it would turn the LF into a blank line (dispatching the event early).
   */
  atLineBoundary = true;

  constructor(private readonly sink: SseEventSink) {}

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
    this.lineBytes += to - from;
    if (this.lineBytes > MAX_LINE_BYTES) {
      // A line too long to be ours to read: it is ignored when it ends. Let go of its data now.
      if (this.phase !== P_SKIP) {
        this.releaseSegments(this.lineSegStart);
        this.spill = null;
        this.phase = P_SKIP;
      }
      return;
    }
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
      this.keepSegment(chunk, at, to);
      return;
    }
    // An `event` value: only whether it is exactly "done" matters.
    let matched = this.doneMatched;
    for (let i = at; i < to; i++) {
      if (matched < DONE.length && chunk[i] === DONE[matched]) {
        matched++;
      } else {
        matched = -1;
        this.phase = P_SKIP;
        break;
      }
    }
    this.doneMatched = matched;
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

  private keepSegment(chunk: Buffer, from: number, to: number): void {
    const length = to - from;
    this.lineValueBytes += length;
    const spill = this.spill;
    if (spill !== null) {
      // The line's one segment is the spill buffer: append to it, growing it when full.
      const last = this.segCount - 1;
      const used = this.segTo[last]!;
      let target = spill;
      if (used + length > spill.length) {
        target = Buffer.allocUnsafe(Math.min(MAX_LINE_BYTES, Math.max(2 * spill.length, used + length)));
        spill.copy(target, 0, 0, used);
        this.spill = target;
        this.segBufs[last] = target;
      }
      chunk.copy(target, used, from, to);
      this.segTo[last] = used + length;
      return;
    }
    const n = this.segCount;
    this.segBufs[n] = chunk;
    this.segFrom[n] = from;
    this.segTo[n] = to;
    this.segCount = n + 1;
    if (this.segCount - this.lineSegStart > MAX_LINE_SEGMENTS) this.startSpill();
  }

  /** Copies the segments of the line being read into one buffer, so a line split into tiny chunks holds one. */
  private startSpill(): void {
    const first = this.lineSegStart;
    const spill = Buffer.allocUnsafe(Math.min(MAX_LINE_BYTES, Math.max(1024, 2 * this.lineValueBytes)));
    let used = 0;
    for (let i = first; i < this.segCount; i++) used += this.segBufs[i]!.copy(spill, used, this.segFrom[i], this.segTo[i]);
    this.releaseSegments(first);
    this.segBufs[first] = spill;
    this.segFrom[first] = 0;
    this.segTo[first] = used;
    this.segCount = first + 1;
    this.spill = spill;
  }

  private finishLine(): void {
    const length = this.lineBytes;
    // A line ended inside its name ("data", "event"): that field with an empty value, if the name is whole.
    let field = this.field;
    if (this.phase === P_NAME && field !== F_NONE && this.nameMatched !== FIELD_NAMES[field]!.length) field = F_OTHER;
    const isDone = this.doneMatched === DONE.length;
    this.lineBytes = 0;
    this.phase = P_NAME;
    this.field = F_NONE;
    this.nameMatched = 0;
    this.doneMatched = 0;
    this.atLineBoundary = true;
    if (length === 0) {
      this.dispatch();
      this.atEventBoundary = true;
      return;
    }
    this.atEventBoundary = false;
    // A line too long to be ours to read counts as nothing (its data was already let go of).
    if (length <= MAX_LINE_BYTES) {
      if (field === F_EVENT) {
        this.nameIsDone = isDone;
        this.hasFields = true;
      } else if (field === F_DATA) {
        this.endDataLine();
        this.hasFields = true;
      } else if (field === F_ID || field === F_RETRY) {
        this.hasFields = true;
      }
    }
    this.spill = null;
    this.lineValueBytes = 0;
    this.lineSegStart = this.segCount;
  }

  /**
   * The data line just read joins the event's. Data is capped as it always was: a line is
   * kept only while the event's decoded data (in UTF-16 units, lines not counting their "\n")
   * stays within MAX_EVENT_DATA_BYTES. A line decodes to at most as many units as it has
   * bytes, so while the kept bytes stay within the cap every line is kept, undecoded.
   */
  private endDataLine(): void {
    const first = this.lineSegStart;
    for (let i = first; i < this.segCount; i++) {
      const buf = this.segBufs[i]!;
      if (buf !== this.lastRetained) {
        this.retainedBytes += buf.length;
        this.lastRetained = buf;
      }
    }
    if (
      this.settled === null &&
      (this.keptBytes + this.lineValueBytes > MAX_EVENT_DATA_BYTES || this.segCount > MAX_KEPT_SEGMENTS || this.retainedBytes > MAX_RETAINED_CHUNK_BYTES)
    ) {
      this.settle();
    }
    if (this.settled === null) {
      this.dataLineStarts[this.dataLineCount++] = first;
      this.keptBytes += this.lineValueBytes;
      return;
    }
    const value = this.decodeSegments(first, this.segCount);
    this.releaseSegments(0);
    this.lastRetained = null;
    if (this.settledLength + value.length <= MAX_EVENT_DATA_BYTES) {
      this.settled.push(value);
      this.settledLength += value.length;
    }
  }

  /** Decodes the whole data lines held as segments (all within the cap) and lets go of their chunks. */
  private settle(): void {
    const settled: string[] = [];
    let length = 0;
    for (let line = 0; line < this.dataLineCount; line++) {
      const value = this.decodeSegments(this.dataLineStarts[line]!, this.lineEnd(line));
      settled.push(value);
      length += value.length;
    }
    this.settled = settled;
    this.settledLength = length;
    this.dataLineCount = 0;
    this.keptBytes = 0;
    this.retainedBytes = 0;
    this.lastRetained = null;
  }

  private lineEnd(line: number): number {
    return line + 1 < this.dataLineCount ? this.dataLineStarts[line + 1]! : this.lineSegStart;
  }

  private decodeSegments(first: number, end: number): string {
    if (end === first) return '';
    if (end === first + 1) return this.segBufs[first]!.toString('utf8', this.segFrom[first], this.segTo[first]);
    // A line split across chunks: joined before decoding, so a character split with it is whole.
    const parts: Buffer[] = [];
    for (let i = first; i < end; i++) parts.push(this.segBufs[i]!.subarray(this.segFrom[i], this.segTo[i]));
    return Buffer.concat(parts).toString('utf8');
  }

  private releaseSegments(from: number): void {
    for (let i = from; i < this.segCount; i++) this.segBufs[i] = null;
    this.segCount = from;
  }

  private dispatch(): void {
    if (!this.hasFields) return;
    let data: string | null = null;
    if (this.nameIsDone) {
      if (this.settled !== null) {
        data = this.settled.join('\n');
      } else if (this.dataLineCount === 1) {
        data = this.decodeSegments(this.dataLineStarts[0]!, this.lineSegStart);
      } else {
        const lines: string[] = [];
        for (let line = 0; line < this.dataLineCount; line++) lines.push(this.decodeSegments(this.dataLineStarts[line]!, this.lineEnd(line)));
        data = lines.join('\n');
      }
    }
    this.releaseSegments(0);
    this.lineSegStart = 0;
    this.dataLineCount = 0;
    this.keptBytes = 0;
    this.retainedBytes = 0;
    this.lastRetained = null;
    this.settled = null;
    this.settledLength = 0;
    this.nameIsDone = false;
    this.hasFields = false;
    this.sink.onEvent(data);
  }
}

/** Reads `tokens_used` from a `done` event's data; null when absent or not a non-negative integer. */
export function tokensFromDoneData(data: string): number | null {
  try {
    const parsed: unknown = JSON.parse(data);
    if (parsed && typeof parsed === 'object') {
      const tokens = (parsed as { tokens_used?: unknown }).tokens_used;
      if (typeof tokens === 'number' && Number.isInteger(tokens) && tokens >= 0) return tokens;
    }
  } catch {
    // A malformed done event still ends the stream; the token count is simply unknown.
  }
  return null;
}
