// Request headers the gateway refuses because the runner could read them differently than
// the gateway did (docs/security.md). Each check runs at the pipeline stage that would
// otherwise act on the header, and costs a few comparisons when the header is as usual.
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../errors.js';

/**
 * Two Host headers: 400 (RFC 9112 3.2). node:http keeps the first for routing, and a proxy
 * or runner further on may take the other. Checked on the raw header list, where a repeat
 * is still visible; the connection is closed after the answer.
 */
export function refuseRepeatedHost(req: IncomingMessage): void {
  const raw = req.rawHeaders;
  let seen = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 4 || !(name === 'host' || name === 'Host' || name.toLowerCase() === 'host')) continue;
    if (seen) throw new GatewayError('invalid_request', { message: 'The request has more than one Host header.', headers: { Connection: 'close' } });
    seen = true;
  }
}

/**
 * A body encoding other than identity: 415. The gateway validates the bytes it receives as
 * JSON; it neither decodes a compressed body nor forwards one it could not read.
 */
export function refuseContentEncoding(req: IncomingMessage): void {
  const encoding = req.headers['content-encoding'];
  if (encoding === undefined || encoding === '' || encoding.trim().toLowerCase() === 'identity') return;
  throw new GatewayError('unsupported_media_type', {
    message: `Content-Encoding ${JSON.stringify(encoding.slice(0, 40))} is not supported; send the JSON body uncompressed.`,
  });
}
