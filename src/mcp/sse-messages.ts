// Reads the JSON-RPC messages out of an MCP server's SSE answer as it streams past, without
// holding a byte back from the client: the front door learns a `tools/call`'s isError for its
// audit record, and counts the server-to-client requests of a hostile server. An event whose
// data grows past `maxEventBytes` is skipped (its bytes still pass through), so a server that
// never ends an event cannot grow the gateway's memory.

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  /** The event's `retry:` (the reconnection delay a server asks for, e.g. on a priming event), as sent. */
  retry: string | undefined;
  data: string;
}

export class SseMessageScanner {
  private pending = '';
  private data: string[] = [];
  private dataBytes = 0;
  private oversized = false;
  private id: string | undefined;
  private event: string | undefined;
  private retry: string | undefined;
  private readonly decoder = new TextDecoder();

  constructor(
    private readonly onEvent: (event: SseEvent) => void,
    private readonly maxEventBytes: number,
    /** Told when an event is skipped for its size (a relay that rewrites events cannot pass it on). */
    private readonly onOversized?: () => void,
  ) {}

  push(chunk: Uint8Array): void {
    this.pending += this.decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const newline = this.pending.indexOf('\n', start);
      if (newline === -1) break;
      let line = this.pending.slice(start, newline);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      start = newline + 1;
      this.line(line);
    }
    this.pending = this.pending.slice(start);
    // A line that never ends: drop what is held, and skip the event it belongs to.
    if (this.pending.length > this.maxEventBytes) {
      this.pending = '';
      this.skip();
    }
  }

  private skip(): void {
    if (!this.oversized) this.onOversized?.();
    this.oversized = true;
    this.data = [];
  }

  private line(line: string): void {
    if (line === '') {
      if (!this.oversized && this.data.length > 0) this.onEvent({ id: this.id, event: this.event, retry: this.retry, data: this.data.join('\n') });
      this.data = [];
      this.dataBytes = 0;
      this.oversized = false;
      this.event = undefined;
      this.retry = undefined;
      // Per event here (an event's own `id:` line), not the stream's last id: enough to re-emit events as sent.
      this.id = undefined;
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.dataBytes += value.length;
      if (this.dataBytes > this.maxEventBytes) this.skip();
      else this.data.push(value);
    } else if (field === 'id') this.id = value;
    else if (field === 'event') this.event = value;
    else if (field === 'retry' && /^\d{1,10}$/.test(value)) this.retry = value;
  }
}
