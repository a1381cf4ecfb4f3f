// What the front door answers itself (docs/mcp.md "Bad input", "Quotas"): a JSON-RPC error body
// with an HTTP status, thrown by a stage as an McpAnswer and written once by the front door.
// Errors of the gateway's own registry (401, 403, 404, 413) are GatewayErrors as on the chat routes.
import type { ServerResponse } from 'node:http';
import { encodeError, type JsonRpcErrorName, type JsonRpcId } from './json-rpc.js';

export class McpAnswer extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    /** Name/value pairs, flat (Retry-After, RateLimit, ...). */
    readonly headers: readonly string[] = [],
    /** The outcome the metrics and the audit record name. */
    readonly outcome: string = 'invalid',
  ) {
    super('MCP answer');
    this.name = 'McpAnswer';
  }
}

/** A JSON-RPC error with an HTTP status. */
export function jsonRpcRefusal(status: number, id: JsonRpcId | null, name: JsonRpcErrorName, message: string, options: { data?: Record<string, unknown>; headers?: readonly string[]; outcome?: string } = {}): McpAnswer {
  return new McpAnswer(status, encodeError(id, name, message, options.data), options.headers, options.outcome);
}

export function writeAnswer(res: ServerResponse, answer: McpAnswer): number {
  if (res.headersSent) {
    res.destroy();
    return 0;
  }
  for (let i = 0; i + 1 < answer.headers.length; i += 2) res.setHeader(answer.headers[i]!, answer.headers[i + 1]!);
  res.statusCode = answer.status;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(answer.body));
  res.setHeader('Cache-Control', 'no-store');
  res.end(answer.body);
  return Buffer.byteLength(answer.body);
}

/** The same refusal carrying another request's id (a failure several requests waited on together). */
export function answerWithId(answer: McpAnswer, id: JsonRpcId | null): McpAnswer {
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    return answer;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return answer;
  return new McpAnswer(answer.status, JSON.stringify({ ...(body as Record<string, unknown>), id }), answer.headers, answer.outcome);
}
