// The data lines of the Server-Sent Event being read (sse-parser.ts reads the lines). Since
// `event:` may follow `data:`, every event's data is kept until the event ends, but only a
// `done` event's is decoded. It runs on every relayed event, so it is allocation-lean: a data
// line is kept as (chunk, from, to) segments, in arrays reused from event to event, not sliced
// or copied; bounds on the segments and the chunks they hold fall back to decoded strings,
// and past the data cap to a streaming scan that holds none of it.
import { ToolCallEventScan } from './answer-scans.js';

/**
 * Data kept per event is capped: a hostile upstream cannot grow the parser without bound. An
 * event's data past the cap (or a data line past MAX_LINE_BYTES) is not kept but read by a
 * bounded streaming scan for the one thing the gateway takes from a large event, a
 * `tool_call`'s tool name (answer-scans.ts; issue 45, H3-03).
 */
const MAX_EVENT_DATA_BYTES = 64 * 1024;
/** The longest line the parser reads (other fields), and the longest data line kept. */
export const MAX_LINE_BYTES = 128 * 1024;
const NEWLINE = Buffer.from('\n');
/**
 * An event's data lines are held as references to the chunks they arrived in. Past these
 * bounds (many data lines, or data spread over many large chunks) the lines are decoded into
 * strings instead, so the chunks can be let go of.
 */
const MAX_KEPT_SEGMENTS = 64;
const MAX_RETAINED_CHUNK_BYTES = 256 * 1024;
/** A data line split over more chunks than this is copied into a buffer of its own. */
const MAX_LINE_SEGMENTS = 8;

export class SseEventData {
  // The data line being read: its bytes so far, and the buffer it is copied to once it spans many chunks.
  private lineValueBytes = 0;
  private spill: Buffer | null = null;
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
  private decoded: string[] | null = null;
  private decodedLength = 0;
  /** Once the event outgrew the cap: its data is scanned as it comes, not kept. */
  private scan: ToolCallEventScan | null = null;
  /** A data line ended since the scan last read: a "\n" joins it to the next. */
  private scanLineEnded = false;

  /** Bytes from..to of chunk continue the value of the data line being read. */
  append(chunk: Buffer, from: number, to: number): void {
    const length = to - from;
    if (this.scan === null && this.lineValueBytes + length > MAX_LINE_BYTES) this.startScan();
    if (this.scan !== null) {
      this.scanBytes(chunk.subarray(from, to));
      return;
    }
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

  /**
   * The data line just read joins the event's. A line is kept only while the event's decoded
   * data (in UTF-16 units, lines not counting their "\n") stays within MAX_EVENT_DATA_BYTES. A
   * line decodes to at most as many units as it has bytes, so while the kept bytes stay within
   * the cap every line is kept, undecoded.
   */
  endLine(): void {
    if (this.scan !== null) {
      // An empty data line still adds its "\n".
      if (this.scanLineEnded) this.scan.push(NEWLINE);
      this.scanLineEnded = true;
      return;
    }
    const first = this.lineSegStart;
    for (let i = first; i < this.segCount; i++) {
      const buf = this.segBufs[i]!;
      if (buf !== this.lastRetained) {
        this.retainedBytes += buf.length;
        this.lastRetained = buf;
      }
    }
    if (
      this.decoded === null &&
      (this.keptBytes + this.lineValueBytes > MAX_EVENT_DATA_BYTES || this.segCount > MAX_KEPT_SEGMENTS || this.retainedBytes > MAX_RETAINED_CHUNK_BYTES)
    ) {
      this.decodeKept();
    }
    if (this.decoded === null) {
      this.dataLineStarts[this.dataLineCount++] = first;
      this.keptBytes += this.lineValueBytes;
    } else {
      const value = this.decodeSegments(first, this.segCount);
      this.releaseSegments(0);
      this.lastRetained = null;
      if (this.decodedLength + value.length <= MAX_EVENT_DATA_BYTES) {
        this.decoded.push(value);
        this.decodedLength += value.length;
      } else {
        // Past the cap: what was kept and this line go to the scan, and nothing more is kept.
        this.lineSegStart = 0;
        this.startScan();
        this.scanBytes(Buffer.from(value));
        this.scanLineEnded = true;
        return;
      }
    }
    this.spill = null;
    this.lineValueBytes = 0;
    this.lineSegStart = this.segCount;
  }

  /** The event ended: its data lines joined with "\n" when `decode`, else null; either way they are let go of. */
  take(decode: boolean): string | null {
    let data: string | null = null;
    if (this.scan !== null) {
      // What the gateway reads of a large event: a `tool_call`'s tool (a `done` this large reads as no count).
      const tool = this.scan.finish();
      if (decode) data = tool === null ? '{}' : JSON.stringify({ tool });
      this.scan = null;
      this.scanLineEnded = false;
      this.lineValueBytes = 0;
    } else if (decode) {
      if (this.decoded !== null) {
        data = this.decoded.join('\n');
      } else if (this.dataLineCount === 1) {
        data = this.decodeSegments(this.dataLineStarts[0]!, this.lineSegStart);
      } else {
        const lines: string[] = [];
        for (let line = 0; line < this.dataLineCount; line++) lines.push(this.decodeSegments(this.dataLineStarts[line]!, this.lineEnd(line)));
        data = lines.join('\n');
      }
    }
    this.letGoOfEventData();
    return data;
  }

  /** The event's data has been handed on (as a string or to a scan): nothing of it is kept. */
  private letGoOfEventData(): void {
    this.releaseSegments(0);
    this.lineSegStart = 0;
    this.dataLineCount = 0;
    this.keptBytes = 0;
    this.retainedBytes = 0;
    this.lastRetained = null;
    this.decoded = null;
    this.decodedLength = 0;
  }

  /**
   * The event's data outgrew what is kept: its whole lines so far (held or decoded) and the
   * part of the line being read go to a streaming scan, in order, and are let go of.
   */
  private startScan(): void {
    const scan = new ToolCallEventScan();
    this.scan = scan;
    let lines = 0;
    if (this.decoded !== null) {
      for (const line of this.decoded) scan.push(Buffer.from(lines++ === 0 ? line : `\n${line}`));
    } else {
      for (let line = 0; line < this.dataLineCount; line++) {
        if (lines++ > 0) scan.push(NEWLINE);
        for (let i = this.dataLineStarts[line]!; i < this.lineEnd(line); i++) scan.push(this.segBufs[i]!.subarray(this.segFrom[i], this.segTo[i]));
      }
    }
    // The line being read continues after the lines before it.
    this.scanLineEnded = lines > 0;
    for (let i = this.lineSegStart; i < this.segCount; i++) this.scanBytes(this.segBufs[i]!.subarray(this.segFrom[i], this.segTo[i]));
    this.letGoOfEventData();
    this.spill = null;
  }

  /** Bytes of a data line's value, to the scan: after the "\n" that joins it to the line before. */
  private scanBytes(bytes: Buffer): void {
    if (this.scanLineEnded) {
      this.scan!.push(NEWLINE);
      this.scanLineEnded = false;
    }
    this.scan!.push(bytes);
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

  /** Decodes the whole data lines held as segments (all within the cap) and lets go of their chunks. */
  private decodeKept(): void {
    const decoded: string[] = [];
    let length = 0;
    for (let line = 0; line < this.dataLineCount; line++) {
      const value = this.decodeSegments(this.dataLineStarts[line]!, this.lineEnd(line));
      decoded.push(value);
      length += value.length;
    }
    this.decoded = decoded;
    this.decodedLength = length;
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
}
