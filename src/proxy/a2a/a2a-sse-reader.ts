// The event framing of an A2A streaming send: each event's `data:` lines, joined, as the
// chunks come. Bounded: an event that grows past MAX_EVENT_BYTES without ending is refused
// (the agent's stream is then not valid), so a hostile agent cannot grow the gateway's memory.
import { StringDecoder } from 'node:string_decoder';

export const MAX_EVENT_BYTES = 1024 * 1024;

export class A2aSseReader {
  /** The unfinished line. */
  private line = '';
  /** The data lines of the event being read. */
  private data: string[] = [];
  private pendingBytes = 0;
  /** A character split across two chunks is decoded whole. */
  private readonly decoder = new StringDecoder('utf8');

  /** The data of every event this chunk completes; null when the event in progress is too large. */
  push(chunk: Buffer): string[] | null {
    this.pendingBytes += chunk.length;
    if (this.pendingBytes > MAX_EVENT_BYTES) return null;
    const text = this.line + this.decoder.write(chunk);
    const events: string[] = [];
    let start = 0;
    let end: number;
    while ((end = text.indexOf('\n', start)) !== -1) {
      let line = text.slice(start, end);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      start = end + 1;
      if (line === '') {
        if (this.data.length > 0) events.push(this.data.join('\n'));
        this.data = [];
        this.pendingBytes = text.length - start;
      } else if (line.startsWith('data:')) {
        this.data.push(line.charCodeAt(5) === 0x20 ? line.slice(6) : line.slice(5));
      }
      // Comments, `event:`, `id:` and `retry:` lines carry nothing the gateway reads.
    }
    this.line = text.slice(start);
    return events;
  }

  /** The data of an event the stream ended without a blank line after. */
  flush(): string | null {
    if (this.line.startsWith('data:')) this.data.push(this.line.slice(this.line.charCodeAt(5) === 0x20 ? 6 : 5));
    this.line = '';
    const last = this.data.length > 0 ? this.data.join('\n') : null;
    this.data = [];
    return last;
  }
}
