// The event framing of an A2A streaming send: each event's `data:` lines, joined, as the
// chunks come. Bounded: an event that grows past MAX_EVENT_BYTES without ending is refused
// (the agent's stream is then not valid), so a hostile agent cannot grow the gateway's memory.
//
// Linear in the bytes received: each chunk is searched for line ends once, from where the last
// search stopped, and an unfinished line is kept as the chunks it came in, joined once when its
// end arrives. Rejoining the pending line to each new chunk and searching it again from its
// start cost time quadratic in an event's size (a 1 MB event in 256-byte pieces: seconds of CPU).

export const MAX_EVENT_BYTES = 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;
const DATA_FIELD = Buffer.from('data:');

export class A2aSseReader {
  /** The unfinished line, as the pieces of the chunks it came in. */
  private lineParts: Buffer[] = [];
  private lineBytes = 0;
  /** The data lines of the event being read. */
  private data: string[] = [];
  /** Bytes of the event being read (its whole lines and the unfinished one). */
  private eventBytes = 0;

  /** The data of every event this chunk completes; null when the event in progress is too large. */
  push(chunk: Buffer): string[] | null {
    const events: string[] = [];
    let start = 0;
    let end: number;
    while ((end = chunk.indexOf(LF, start)) !== -1) {
      const line = this.takeLine(chunk, start, end);
      this.eventBytes += end + 1 - start;
      start = end + 1;
      if (line.length === 0) {
        if (this.data.length > 0) events.push(this.data.join('\n'));
        this.data = [];
        this.eventBytes = 0;
      } else {
        this.readLine(line);
      }
      if (this.eventBytes > MAX_EVENT_BYTES) return null;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.lineParts.push(rest);
      this.lineBytes += rest.length;
      this.eventBytes += rest.length;
    }
    return this.eventBytes > MAX_EVENT_BYTES ? null : events;
  }

  /** The data of an event the stream ended without a blank line after. */
  flush(): string | null {
    if (this.lineBytes > 0) this.readLine(this.joinedLine(Buffer.alloc(0)));
    this.lineParts = [];
    this.lineBytes = 0;
    const last = this.data.length > 0 ? this.data.join('\n') : null;
    this.data = [];
    this.eventBytes = 0;
    return last;
  }

  /** The line ending at `end` (its LF), with the pieces before it, without its CR. */
  private takeLine(chunk: Buffer, start: number, end: number): Buffer {
    const tail = chunk.subarray(start, end);
    const line = this.lineBytes === 0 ? tail : this.joinedLine(tail);
    this.lineParts = [];
    this.lineBytes = 0;
    return line.length > 0 && line[line.length - 1] === CR ? line.subarray(0, line.length - 1) : line;
  }

  private joinedLine(tail: Buffer): Buffer {
    this.lineParts.push(tail);
    return Buffer.concat(this.lineParts, this.lineBytes + tail.length);
  }

  /** A data line's value joins the event's; comments, `event:`, `id:` and `retry:` lines carry nothing the gateway reads. */
  private readLine(line: Buffer): void {
    if (line.length < DATA_FIELD.length || line.compare(DATA_FIELD, 0, DATA_FIELD.length, 0, DATA_FIELD.length) !== 0) return;
    const from = line[DATA_FIELD.length] === 0x20 ? DATA_FIELD.length + 1 : DATA_FIELD.length;
    this.data.push(line.toString('utf8', from));
  }
}
