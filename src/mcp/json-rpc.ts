// The JSON-RPC 2.0 messages of MCP as the front door reads and writes them (docs/mcp.md "Bad
// input"): one typed decoder for what a client or a server sends (request, notification,
// response), one encoder for what the gateway answers itself (results and errors). Every
// error the gateway writes in JSON-RPC form goes through encodeError, with a named code.

/** The error codes the front door answers with, by name (JSON-RPC 2.0 and MCP). */
export const JSON_RPC_ERRORS = {
  parse_error: -32700,
  invalid_request: -32600,
  method_not_found: -32601,
  /** What an MCP server answers for a tool or prompt it does not have: a scope cannot be told from absence. */
  invalid_params: -32602,
  internal_error: -32603,
  /** A refusal by the gateway's limits (data.type names it). */
  server_error: -32000,
} as const;

export type JsonRpcErrorName = keyof typeof JSON_RPC_ERRORS;
export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  kind: 'request';
  id: JsonRpcId;
  method: string;
  params: Record<string, unknown> | undefined;
}

export interface JsonRpcNotification {
  kind: 'notification';
  method: string;
  params: Record<string, unknown> | undefined;
}

export interface JsonRpcResponse {
  kind: 'response';
  id: JsonRpcId | null;
  /** Present on a success (any JSON value). */
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** Why a value is not a JSON-RPC message; its `code` is what the gateway answers. */
export class JsonRpcDecodeError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'JsonRpcDecodeError';
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is JsonRpcId {
  return (typeof value === 'string' && value.length <= 1024) || (typeof value === 'number' && Number.isFinite(value));
}

function paramsOf(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  // MCP's params are always an object; positional params are not part of the protocol.
  if (!isObject(value)) throw new JsonRpcDecodeError(JSON_RPC_ERRORS.invalid_request, '"params" must be an object.');
  return value;
}

/** One message, or a JsonRpcDecodeError (-32600) naming what is wrong. */
export function decodeMessage(value: unknown): JsonRpcMessage {
  if (!isObject(value)) throw new JsonRpcDecodeError(JSON_RPC_ERRORS.invalid_request, 'A JSON-RPC message must be an object.');
  if (value.jsonrpc !== '2.0') throw new JsonRpcDecodeError(JSON_RPC_ERRORS.invalid_request, '"jsonrpc" must be "2.0".');
  if (typeof value.method === 'string') {
    if (value.method.length === 0 || value.method.length > 256) throw new JsonRpcDecodeError(JSON_RPC_ERRORS.invalid_request, '"method" must be a name of 1 to 256 characters.');
    const params = paramsOf(value.params);
    if (!('id' in value)) return { kind: 'notification', method: value.method, params };
    if (!isId(value.id)) throw new JsonRpcDecodeError(JSON_RPC_ERRORS.invalid_request, '"id" must be a string or a number.');
    return { kind: 'request', id: value.id, method: value.method, params };
  }
  if ('method' in value) throw new JsonRpcDecodeError(JSON_RPC_ERRORS.invalid_request, '"method" must be a string.');
  const id = value.id === null ? null : isId(value.id) ? value.id : undefined;
  if (id === undefined) throw new JsonRpcDecodeError(JSON_RPC_ERRORS.invalid_request, 'A response needs an "id".');
  if ('result' in value) return { kind: 'response', id, result: value.result };
  const error = value.error;
  if (isObject(error) && typeof error.code === 'number' && typeof error.message === 'string') {
    return { kind: 'response', id, error: { code: error.code, message: error.message, data: error.data } };
  }
  throw new JsonRpcDecodeError(JSON_RPC_ERRORS.invalid_request, 'A message needs a "method", a "result" or an "error".');
}

/** The request id of a value that may not decode (for the error answering it): null when none can be read. */
export function idOf(value: unknown): JsonRpcId | null {
  return isObject(value) && isId(value.id) ? value.id : null;
}

/** A JSON-RPC error object's text. */
export function encodeError(id: JsonRpcId | null, name: JsonRpcErrorName, message: string, data?: Record<string, unknown>): string {
  const error = data === undefined ? { code: JSON_RPC_ERRORS[name], message } : { code: JSON_RPC_ERRORS[name], message, data };
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/** A JSON-RPC success object's text. */
export function encodeResult(id: JsonRpcId | null, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}
