// Writing gateway errors (registered in src/errors.ts) to a response or a raw socket.
import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from '../node-http.js';
import type { Duplex } from 'node:stream';
import { errorBody, type GatewayError } from '../errors.js';
import { closesConnection } from './http2-requests.js';

/**
 * Writes a gateway error. Headers already set on the response (X-Request-Id, rate-limit
 * headers) are kept; the error adds its own (WWW-Authenticate, Retry-After, Allow).
 */
export function sendError(res: ServerResponse, error: GatewayError, requestId: string, counter?: { bytesOut: number }): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = errorBody(error, requestId);
  if (error.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
  if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(Math.max(0, Math.ceil(error.retryAfterSeconds))));
  if (error.headers) {
    for (const [name, value] of Object.entries(error.headers)) if (name !== 'Connection' || closesConnection(res.req)) res.setHeader(name, value);
  }
  res.statusCode = error.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.setHeader('Cache-Control', 'no-store');
  // Counted before end(): the audit record may be made as the response ends (JournaledResponse).
  if (counter) counter.bytesOut += Buffer.byteLength(body);
  res.end(body);
}

/**
 * Writes a gateway error straight to a socket and closes it, for the cases Node handles
 * before there is a request object (unparsable HTTP, oversized headers, timeouts, CONNECT).
 */
export function writeRawError(socket: Duplex, error: GatewayError, requestId = 'none'): void {
  const body = errorBody(error, requestId);
  // Destroy once flushed rather than wait for the peer's FIN: a hostile client that never
  // closes its side would otherwise hold the socket (and a graceful shutdown) open.
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * Whether the socket carries a response to an earlier, complete request (node:http keeps the
 * response as `_httpMessage` until it finishes): a malformed request arriving behind it must
 * close the connection without a word, since a raw 400 would land inside that response's
 * bytes, or be read as its answer. A request still being received (a slow body) has its own
 * response, not started: its error is still answered.
 */
export function hasResponseInFlight(socket: Duplex): boolean {
  const res = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  return res != null && (res.headersSent || res.req?.complete === true);
}
