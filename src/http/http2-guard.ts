// What a client can make an HTTP/2 connection cost (docs/security.md, "HTTP/2";
// docs/decisions/0045-http2-deadlines-and-rapid-reset.md): node:http2 enforces none of
// listen.request_timeout, and a client may open streams and reset them as fast as it can
// write frames. Three bounds, all on the HTTP/2 side only (HTTP/1.1 requests never get here):
// - SETTINGS_MAX_CONCURRENT_STREAMS is advertised (listen.tls.max_concurrent_streams);
// - a stream whose request (head and body) is not in within listen.request_timeout is
//   answered 408 request_timeout and reset, like HTTP/1.1's 408, checked every second by one
//   sweep for all streams (no timer per stream);
// - a connection that resets more than listen.tls.max_stream_resets streams per
//   stream_resets_per is sent GOAWAY ENHANCE_YOUR_CALM and closed.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants, type Http2ServerRequest, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { GatewayConfig } from '../config/schema.js';
import { metrics } from '../metrics/metrics.js';
import { expireBodyRead } from './read-body.js';

type ListenConfig = GatewayConfig['listen'];
type TlsConfig = NonNullable<ListenConfig['tls']>;

/** How often deadlines are checked: as node:http's connectionsCheckingInterval. */
const SWEEP_INTERVAL_MS = 1_000;

/** The SETTINGS every session advertises. */
export function http2Settings(listen: ListenConfig, tls: TlsConfig): { maxHeaderListSize: number; maxConcurrentStreams: number } {
  return { maxHeaderListSize: listen.maxHeaderBytes, maxConcurrentStreams: tls.maxConcurrentStreams };
}

/** Counts a session's stream resets in fixed intervals; past the limit, GOAWAY ENHANCE_YOUR_CALM. */
export function guardResets(session: ServerHttp2Session, tls: TlsConfig): void {
  let windowStart = performance.now();
  let resets = 0;
  session.on('stream', (stream: ServerHttp2Stream) => {
    // 'aborted': the client reset the stream before the gateway's answer ended.
    stream.once('aborted', () => {
      const now = performance.now();
      if (now - windowStart >= tls.streamResetsPerMs) {
        windowStart = now;
        resets = 0;
      }
      resets += 1;
      if (resets === tls.maxStreamResets + 1 && !session.destroyed) {
        metrics.http2SessionsRefused.inc({ reason: 'stream_resets' });
        // Out of nghttp2's frame callback: a session destroyed inside it leaves the socket
        // open (the client is never told).
        setImmediate(() => {
          if (session.destroyed) return;
          session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
          session.destroy();
        });
      }
    });
  });
}

interface PendingRequest {
  req: IncomingMessage;
  res: ServerResponse;
  dueMs: number;
}

/**
 * HTTP/2 requests still being received, by arrival (so by deadline, for one request_timeout):
 * the sweep stops at the first one not due. An entry leaves when its response closes.
 */
export class Http2RequestDeadlines {
  private readonly pending = new Set<PendingRequest>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly requestTimeoutMs: () => number) {
    this.timer = setInterval(() => this.sweep(performance.now()), SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  track(req: IncomingMessage, res: ServerResponse): void {
    const entry: PendingRequest = { req, res, dueMs: performance.now() + this.requestTimeoutMs() };
    this.pending.add(entry);
    res.once('close', () => this.pending.delete(entry));
  }

  sweep(nowMs: number): void {
    for (const entry of this.pending) {
      if (entry.dueMs > nowMs) return;
      this.pending.delete(entry);
      const { req, res } = entry;
      // The whole request arrived in time: what follows is the runner's (its own deadlines).
      if (req.complete) continue;
      // A body being read: the pipeline answers 408 request_timeout and resets the stream.
      if (expireBodyRead(req)) {
        metrics.http2RequestTimeouts.inc();
        continue;
      }
      // Answered (a refusal) while the client still sends: the stream is reset. A request not
      // read yet is the gateway's to decide (a key lookup, the limiter), not the client's delay.
      const stream = (req as unknown as Http2ServerRequest).stream;
      if (res.headersSent && !stream.destroyed) {
        metrics.http2RequestTimeouts.inc();
        stream.close(constants.NGHTTP2_NO_ERROR);
      }
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.pending.clear();
  }
}
