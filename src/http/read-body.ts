// Reads the request body within `limits.max_body_bytes`, after checking its media type.
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../errors.js';

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

/** Where readBody hands the body, or why there is none; exactly one of the two is called, once. */
export interface BodyReceiver {
  bodyReceived(body: Buffer): void;
  /** payload_too_large, the request stream's error, or ClientGoneError. */
  bodyFailed(error: Error): void;
}

interface BodyRead {
  receiver: BodyReceiver;
  maxBytes: number;
  chunks: Buffer[];
  received: number;
  settled: boolean;
}

// The read's state rides on the request under a symbol, and the four listeners are module
// functions reading it through `this` (the request): no closures and no promise per request.
const BODY_READ = Symbol('agentgw.bodyRead');
type ReadingRequest = IncomingMessage & { [BODY_READ]?: BodyRead };
/** What a settled read holds instead of its chunks (nothing is pushed once it has settled). */
const NO_CHUNKS: Buffer[] = [];

/**
 * Collects the body and hands it to `receiver`. Refuses early on a Content-Length over the
 * limit, and stops reading (413) as soon as a chunked body passes it, so an oversized body
 * costs at most the limit. The body arrives from the request's 'end' event; failures are handed
 * over on the next tick, outside the HTTP parser's callbacks.
 */
export function readBody(req: IncomingMessage, maxBytes: number, receiver: BodyReceiver): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    process.nextTick(failRead, receiver, tooLarge(maxBytes));
    return;
  }
  (req as ReadingRequest)[BODY_READ] = { receiver, maxBytes, chunks: [], received: 0, settled: false };
  // The listeners stay on the request once it settles (it lives no longer than its
  // response): removing four listeners per request cost more than the flag that makes
  // the late ones no-ops.
  req.on('data', onBodyData);
  req.on('end', onBodyEnd);
  req.on('error', onBodyError);
  req.on('aborted', onBodyAborted);
}

function tooLarge(maxBytes: number): GatewayError {
  return new GatewayError('payload_too_large', { message: `The request body is larger than ${maxBytes} bytes.` });
}

function failRead(receiver: BodyReceiver, error: Error): void {
  receiver.bodyFailed(error);
}

/** The read in progress, or undefined once it has settled. */
function openRead(req: ReadingRequest): BodyRead | undefined {
  const read = req[BODY_READ];
  return read === undefined || read.settled ? undefined : read;
}

function onBodyData(this: ReadingRequest, chunk: Buffer): void {
  const read = openRead(this);
  if (read === undefined) return;
  read.received += chunk.length;
  if (read.received > read.maxBytes) {
    read.settled = true;
    read.chunks = NO_CHUNKS;
    this.pause();
    process.nextTick(failRead, read.receiver, tooLarge(read.maxBytes));
    return;
  }
  read.chunks.push(chunk);
}

function onBodyEnd(this: ReadingRequest): void {
  const read = openRead(this);
  if (read === undefined) return;
  read.settled = true;
  const { chunks } = read;
  const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, read.received);
  // The request outlives this (as long as a stream runs): it need not hold the chunks. The
  // array is dropped, not emptied: `length = 0` is a generic store through V8's runtime
  // (≈ 450 instructions a request under callgrind), and a settled read pushes nothing more.
  read.chunks = NO_CHUNKS;
  read.receiver.bodyReceived(body);
}

function onBodyError(this: ReadingRequest, error: Error): void {
  const read = openRead(this);
  if (read === undefined) return;
  read.settled = true;
  process.nextTick(failRead, read.receiver, error);
}

function onBodyAborted(this: ReadingRequest): void {
  const read = openRead(this);
  if (read === undefined) return;
  read.settled = true;
  process.nextTick(failRead, read.receiver, new ClientGoneError());
}

/**
 * listen.request_timeout passed while the body was still coming (HTTP/2 only: node:http
 * enforces it itself on HTTP/1.1): the read settles with request_timeout, so a body that
 * arrives later is never forwarded. False when no read is in progress.
 */
export function expireBodyRead(req: IncomingMessage): boolean {
  const read = openRead(req as ReadingRequest);
  if (read === undefined) return false;
  read.settled = true;
  read.chunks = NO_CHUNKS;
  req.pause();
  process.nextTick(failRead, read.receiver, new GatewayError('request_timeout'));
  return true;
}

/** The client went away before its body arrived: nothing to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('client closed the connection before sending its body');
  }
}
