// Reads the request body within `limits.max_body_bytes`, after checking its media type.
import type { IncomingMessage } from 'node:http';
import { GatewayError } from './errors.js';

/** application/json with optional parameters (charset=utf-8); nothing else. */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const semicolon = contentType.indexOf(';');
  const mediaType = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  if (mediaType !== 'application/json') return false;
  if (semicolon === -1) return true;
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType.slice(semicolon));
  return !charset || charset[1]!.toLowerCase() === 'utf-8' || charset[1]!.toLowerCase() === 'utf8';
}

/**
 * Collects the body. Rejects early on a Content-Length over the limit, and stops reading
 * (413) as soon as a chunked body passes it, so a 10 MB body costs at most the limit.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    return Promise.reject(new GatewayError('payload_too_large', { message: `The request body is larger than ${maxBytes} bytes.` }));
  }
  return new Promise((resolve, reject) => {
    // The listeners stay on the request once it settles (it lives no longer than its
    // response): removing four listeners per request cost more than the flag that makes
    // the late ones no-ops.
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      received += chunk.length;
      if (received > maxBytes) {
        settled = true;
        chunks.length = 0;
        req.pause();
        reject(new GatewayError('payload_too_large', { message: `The request body is larger than ${maxBytes} bytes.` }));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    });
    req.on('error', (error: Error) => {
      if (settled) return;
      settled = true;
      reject(error);
    });
    req.on('aborted', () => {
      if (settled) return;
      settled = true;
      reject(new ClientGoneError());
    });
  });
}

/** The client went away before its body arrived: nothing to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('client closed the connection before sending its body');
  }
}
