// The one error registry (docs/design.md, "Wire contract"): every error the gateway itself
// answers, with its status and default message. Nothing else in the code picks a status for
// a gateway error. It sits below every layer, so each stage can throw GatewayError.

export const ERROR_TYPES = {
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  invalid_request: { status: 400, message: 'The request body is not a valid chat request.' },
  missing_api_key: { status: 401, message: 'Send your API key as "Authorization: Bearer ha_...".' },
  invalid_api_key: { status: 401, message: 'The API key is not valid.' },
  expired_api_key: { status: 401, message: 'The API key has expired.' },
  revoked_api_key: { status: 401, message: 'The API key has been revoked.' },
  agent_not_allowed: { status: 401, message: 'The API key is not allowed to use this agent.' },
  // A JWT access token that fails any check (docs/identity.md); answered with the RFC 6750 challenge below.
  invalid_token: { status: 401, message: 'The access token is not valid.' },
  missing_admin_token: { status: 401, message: 'Send an admin token as "Authorization: Bearer <token>".' },
  invalid_admin_token: { status: 401, message: 'The admin token is not valid.' },
  insufficient_role: { status: 403, message: 'This admin token has the viewer role; this operation needs the admin role.' },
  // The MCP front door (docs/mcp.md): a key whose MCP scope does not name the server, a browser
  // page from an origin not in mcp.allowed_origins, a session the gateway does not know (or lost upstream).
  key_not_allowed: { status: 403, message: 'The API key is not allowed to use this MCP server.' },
  origin_not_allowed: { status: 403, message: 'Requests from this Origin are not allowed; add it to mcp.allowed_origins.' },
  mcp_session_not_found: { status: 404, message: 'No such MCP session (it ended, expired or was lost upstream); initialize a new one.' },
  csrf_token_invalid: { status: 403, message: 'A dashboard write needs the X-CSRF-Token header of its session, sent from the dashboard itself.' },
  not_found: { status: 404, message: 'No such route. Chat routes are POST /agents/{agent}/api/v1/chat and /chat/stream.' },
  key_not_found: { status: 404, message: 'No key with this key_id.' },
  method_not_allowed: { status: 405, message: 'This route only accepts POST.' },
  request_timeout: { status: 408, message: 'The request was not received in time.' },
  payload_too_large: { status: 413, message: 'The request body is larger than the gateway accepts.' },
  unsupported_media_type: { status: 415, message: 'The request body must be sent with Content-Type: application/json.' },
  expectation_failed: { status: 417, message: 'The only Expect the gateway honours is 100-continue.' },
  request_header_fields_too_large: { status: 431, message: 'The request headers are too large.' },
  rate_limit_exceeded: { status: 429, message: 'Rate limit exceeded; retry after the time in the Retry-After header.' },
  token_budget_exceeded: { status: 429, message: "The plan's token budget is spent; retry after the time in the Retry-After header." },
  cost_budget_exceeded: { status: 429, message: "The plan's cost budget is spent; retry after the time in the Retry-After header." },
  tool_budget_exceeded: { status: 429, message: "The plan's quota of calls to a tool the request names is spent; retry after the time in the Retry-After header." },
  concurrency_limit_exceeded: { status: 429, message: "The plan's open streams are all in use; retry after the time in the Retry-After header." },
  internal_error: { status: 500, message: 'The gateway failed to handle the request.' },
  // 502s come from A2A agents only (docs/a2a.md): an Agent Chat runner's own answers pass through.
  agent_error: { status: 502, message: 'The agent answered the request with an A2A error.' },
  agent_task_failed: { status: 502, message: "The agent's task ended without an answer (failed, rejected or canceled)." },
  agent_bad_response: { status: 502, message: "The agent's answer was not a valid A2A answer." },
  agent_unavailable: { status: 503, message: 'The agent is temporarily unavailable; retry after a few seconds.' },
  store_unavailable: { status: 503, message: 'The gateway cannot reach its store right now; retry after a few seconds.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorType = keyof typeof ERROR_TYPES;

/**
 * Types of the final `event: error` the gateway appends when a stream ends abnormally
 * (docs/design.md, "Streaming"); the HTTP status is already 200 by then, so they have none.
 */
export const STREAM_ERROR_TYPES = {
  upstream_error: 'The agent stream ended abnormally before it was complete.',
  upstream_timeout: 'The agent sent nothing for too long; the stream was closed.',
  stream_timeout: 'The stream reached its maximum duration and was closed.',
  shutting_down: 'The gateway is shutting down; retry the request.',
  agent_error: 'The agent answered with an A2A error.',
  agent_task_failed: "The agent's task ended without an answer (failed, rejected or canceled).",
  agent_bad_response: "The agent's stream was not a valid A2A stream.",
} as const;

export type StreamErrorType = keyof typeof STREAM_ERROR_TYPES;

/** The SSE text of a final error event. */
export function streamErrorEvent(type: StreamErrorType, requestId: string): string {
  return `event: error\ndata: ${JSON.stringify({ type, message: STREAM_ERROR_TYPES[type], request_id: requestId })}\n\n`;
}

export interface GatewayErrorOptions {
  message?: string;
  param?: string;
  retryAfterSeconds?: number;
  headers?: Record<string, string>;
}

/** An error the gateway answers itself; thrown or returned by any stage of the request pipeline. */
export class GatewayError extends Error {
  readonly status: number;
  readonly param: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(readonly type: ErrorType, options: GatewayErrorOptions = {}) {
    super(options.message ?? ERROR_TYPES[type].message);
    this.name = 'GatewayError';
    this.status = ERROR_TYPES[type].status;
    this.param = options.param;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.headers = options.headers;
  }
}

/**
 * 401 invalid_token with its RFC 6750 challenge, `Bearer error="invalid_token"`; on an MCP
 * endpoint also `resource_metadata` (RFC 9728), the URL of the protected resource metadata.
 */
export function invalidTokenError(message?: string, resourceMetadataUrl?: string): GatewayError {
  const challenge = resourceMetadataUrl === undefined ? 'Bearer error="invalid_token"' : `Bearer resource_metadata="${resourceMetadataUrl}", error="invalid_token"`;
  return new GatewayError('invalid_token', { message, headers: { 'WWW-Authenticate': challenge } });
}

/** The JSON envelope every gateway error uses: {"error": {type, message, request_id, param?}}. */
export function errorBody(error: GatewayError, requestId: string): string {
  return JSON.stringify({
    error: { type: error.type, message: error.message, request_id: requestId, ...(error.param !== undefined ? { param: error.param } : {}) },
  });
}

