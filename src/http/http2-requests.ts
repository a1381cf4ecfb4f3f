// What differs for a request that came over HTTP/2 (listen.tls.http2, docs/operations.md
// "TLS"): node:http2's compatibility objects stand in for IncomingMessage and ServerResponse,
// and the pipeline reads them as such, except for the few things here. An HTTP/1.1 request
// pays one integer comparison for each.
import type { IncomingMessage } from 'node:http';
import { constants, type Http2ServerRequest } from 'node:http2';

/** The host the client addressed: `Host`, or HTTP/2's `:authority` (which replaces it). */
export function requestHost(req: IncomingMessage): string | undefined {
  if (req.httpVersionMajor !== 2) return req.headers.host;
  const authority = req.headers[':authority'];
  return typeof authority === 'string' ? authority : req.headers.host;
}

/**
 * The object that stands for the client's connection (key-authenticator.ts remembers the last
 * key per connection). Over HTTP/2, req.socket is a new proxy per stream; the session is the
 * connection.
 */
export function requestConnection(req: IncomingMessage): object {
  if (req.httpVersionMajor !== 2) return req.socket;
  return (req as unknown as Http2ServerRequest).stream.session ?? req.socket;
}

/**
 * Whether `Connection: close` means anything on this request: HTTP/2 forbids the header
 * (Node drops it with a warning); a stream ends without closing its connection.
 */
export function closesConnection(req: IncomingMessage | undefined): boolean {
  return req?.httpVersionMajor !== 2;
}

/**
 * HTTP/2's counterpart of closing the connection after refusing a body the client is still
 * sending: once the answer is out, the stream is reset with NO_ERROR (RFC 9113, 8.1), so the
 * client stops sending and the session stays open for its other streams.
 */
export function resetStreamAfterAnswer(req: IncomingMessage): void {
  const stream = (req as unknown as Http2ServerRequest).stream;
  // The stream's own 'finish' (the answer handed to the session): the compatibility
  // response emits its 'finish' only once the stream has closed.
  stream.once('finish', () => {
    if (!stream.closed) stream.close(constants.NGHTTP2_NO_ERROR);
  });
}
