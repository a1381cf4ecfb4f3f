// Reading and validating admin request bodies and query strings: JSON only, at most
// ADMIN_MAX_BODY_BYTES, checked against a zod schema whose first problem becomes a 400
// invalid_request naming the field (`param`).
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { GatewayError } from '../errors.js';
import { isJsonContentType, readBody } from '../http/read-body.js';
import { paramPath } from '../keys/key-service.js';

/** Key settings are small; anything larger is a mistake or an attack. */
export const ADMIN_MAX_BODY_BYTES = 64 * 1024;

function bodyBytes(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => readBody(req, ADMIN_MAX_BODY_BYTES, { bodyReceived: resolve, bodyFailed: reject }));
}

/**
 * The body as JSON. `optional`: an empty body (no Content-Type needed) reads as {} — for
 * the action routes (revoke, rotate) whose body may be left out.
 */
export async function readJsonBody(req: IncomingMessage, optional = false): Promise<unknown> {
  const length = req.headers['content-length'];
  const hasBody = length !== undefined ? length !== '0' : req.headers['transfer-encoding'] !== undefined;
  if (!hasBody && optional) {
    await bodyBytes(req);
    return {};
  }
  if (!isJsonContentType(req.headers['content-type'])) throw new GatewayError('unsupported_media_type');
  const body = await bodyBytes(req);
  if (body.length === 0) {
    if (optional) return {};
    throw new GatewayError('invalid_json', { message: 'The request body is empty; send a JSON object.' });
  }
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new GatewayError('invalid_json');
  }
}

/** Validates `value`; the first problem is a 400 invalid_request with its field as `param`. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, prefix: readonly PropertyKey[] = []): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path;
  const param = paramPath([...prefix, ...path]);
  const message = issue.code === 'unrecognized_keys' ? `unknown field "${issue.keys[0]}"` : issue.message;
  throw new GatewayError('invalid_request', { param: param === '' ? undefined : param, message: param === '' ? `The request body must be a JSON object: ${message}` : `${param}: ${message}` });
}

/** The query string as an object of single values; a repeated parameter is a 400. */
export function queryObject(search: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of search) {
    if (name in out) throw new GatewayError('invalid_request', { param: name, message: `${name}: give it once` });
    out[name] = value;
  }
  return out;
}
