// The answer the front door relays for a request to a stdio MCP server (docs/mcp.md "stdio
// servers"): the child's lines as SSE events (`event: message`), or one JSON body, in a stream
// shaped like an HTTP upstream's answer (mcp-transport.ts). Bounded: while the client reads
// slower than the child writes, notifications and server-to-client requests past
// `maxBufferedBytes` are dropped (a flood cannot grow memory); a response is always kept.
import { PassThrough } from 'node:stream';
import type { UpstreamAnswer } from './mcp-transport.js';

export class StdioAnswerStream {
  readonly body = new PassThrough();
  dropped = 0;

  constructor(private readonly maxBufferedBytes: number) {}

  get open(): boolean {
    return !this.body.destroyed && !this.body.writableEnded;
  }

  /** One message as an SSE event; false when it was dropped (the client is not keeping up, or gone). */
  event(line: string, isResponse: boolean): boolean {
    if (!this.open) return false;
    if (!isResponse && this.body.writableLength > this.maxBufferedBytes) {
      this.dropped += 1;
      return false;
    }
    this.body.write(`event: message\ndata: ${line}\n\n`);
    return true;
  }

  end(): void {
    if (this.open) this.body.end();
  }

  sseAnswer(): UpstreamAnswer {
    return { statusCode: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: this.body };
  }
}

/** A whole JSON answer (a response to a request asked for as JSON). */
export function jsonAnswer(text: string): UpstreamAnswer {
  const body = new PassThrough();
  body.end(text);
  return { statusCode: 200, headers: { 'content-type': 'application/json' }, body };
}

/** An empty answer with a status (202 for a notification or a response, 200 for DELETE). */
export function emptyAnswer(statusCode: number): UpstreamAnswer {
  const body = new PassThrough();
  body.end();
  return { statusCode, headers: {}, body };
}
