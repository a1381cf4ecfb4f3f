// Side-parser for the upstream's Server-Sent Events. It reads the same Buffer chunks that
// are written to the client (it never holds a byte back) and reports whole events, so the
// gateway can count events and read `done.tokens_used`. Works on bytes: a multi-byte
// character or a CRLF split across chunks is handled, and only the lines it needs are decoded.

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

/** Data kept per event is capped: a hostile upstream cannot grow the parser without bound. */
const MAX_EVENT_DATA_BYTES = 64 * 1024;
const MAX_LINE_BYTES = 128 * 1024;

export interface SseEventSink {
  /** Called once per dispatched event with its name ("message" when none) and its data. */
  onEvent(eventName: string, data: string): void;
}

export class SseSideParser {
  private lineParts: Buffer[] = [];
  private lineBytes = 0;
  private lineOverflow = false;
  private lastByteWasCR = false;
  private eventName = '';
  private dataParts: string[] = [];
  private dataBytes = 0;
  private hasFields = false;
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
      this.appendLinePart(chunk, start, i);
      this.finishLine();
      this.lastByteWasCR = byte === CR;
      start = i + 1;
    }
    if (start < length) {
      this.appendLinePart(chunk, start, length);
      this.lastByteWasCR = false;
      this.atLineBoundary = false;
      this.atEventBoundary = false;
    } else if (this.lastByteWasCR && !this.atEventBoundary) {
      this.atLineBoundary = false;
    }
  }

  private appendLinePart(chunk: Buffer, from: number, to: number): void {
    if (to <= from || this.lineOverflow) return;
    if (this.lineBytes + (to - from) > MAX_LINE_BYTES) {
      this.lineOverflow = true;
      return;
    }
    this.lineParts.push(chunk.subarray(from, to));
    this.lineBytes += to - from;
  }

  private finishLine(): void {
    const parts = this.lineParts;
    const line = parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.lineBytes);
    const overflowed = this.lineOverflow;
    this.lineParts = [];
    this.lineBytes = 0;
    this.lineOverflow = false;
    this.atLineBoundary = true;
    if (line.length === 0 && !overflowed) {
      this.dispatch();
      this.atEventBoundary = true;
      return;
    }
    this.atEventBoundary = false;
    if (overflowed || line[0] === COLON) return; // comment, or a line too long to be ours to read
    let colon = line.indexOf(COLON);
    if (colon === -1) colon = line.length;
    const field = line.toString('latin1', 0, colon);
    let valueStart = colon + 1;
    if (valueStart < line.length && line[valueStart] === SPACE) valueStart++;
    if (field === 'event') {
      this.eventName = valueStart <= line.length ? line.toString('utf8', valueStart) : '';
      this.hasFields = true;
    } else if (field === 'data') {
      const value = valueStart <= line.length ? line.toString('utf8', valueStart) : '';
      if (this.dataBytes + value.length <= MAX_EVENT_DATA_BYTES) {
        this.dataParts.push(value);
        this.dataBytes += value.length;
      }
      this.hasFields = true;
    } else if (field === 'id' || field === 'retry') {
      this.hasFields = true;
    }
  }

  private dispatch(): void {
    if (!this.hasFields) return;
    const name = this.eventName === '' ? 'message' : this.eventName;
    const data = this.dataParts.length === 1 ? this.dataParts[0]! : this.dataParts.join('\n');
    this.eventName = '';
    this.dataParts = [];
    this.dataBytes = 0;
    this.hasFields = false;
    this.sink.onEvent(name, data);
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
