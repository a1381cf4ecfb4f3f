// A POST body read whole, up to `maxBytes` (mcp.max_body): a declared length over it is
// refused before a byte is read, a body that grows past it as soon as it does; either way 413
// and the connection closed, so the rest of a huge body is never read.
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../errors.js';

const TOO_LARGE = () => new GatewayError('payload_too_large', { headers: { Connection: 'close' } });

export function readBoundedBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(TOO_LARGE());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length > maxBytes) {
        cleanup();
        req.resume();
        reject(TOO_LARGE());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
