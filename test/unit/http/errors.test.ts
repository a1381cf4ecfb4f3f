// Pins the error registry (docs/design.md, "Errors"): every type, its status, and the envelope.
import { describe, expect, it } from 'vitest';
import { ERROR_TYPES, GatewayError, STREAM_ERROR_TYPES, errorBody, streamErrorEvent } from '../../../src/errors.js';

describe('error registry', () => {
  it('holds exactly these types with these statuses', () => {
    expect(Object.fromEntries(Object.entries(ERROR_TYPES).map(([type, { status }]) => [type, status]))).toEqual({
      invalid_json: 400,
      invalid_request: 400,
      missing_api_key: 401,
      invalid_api_key: 401,
      invalid_token: 401,
      expired_api_key: 401,
      revoked_api_key: 401,
      agent_not_allowed: 401,
      missing_admin_token: 401,
      invalid_admin_token: 401,
      insufficient_role: 403,
      key_not_allowed: 403,
      origin_not_allowed: 403,
      mcp_session_not_found: 404,
      csrf_token_invalid: 403,
      not_found: 404,
      key_not_found: 404,
      method_not_allowed: 405,
      request_timeout: 408,
      payload_too_large: 413,
      unsupported_media_type: 415,
      expectation_failed: 417,
      request_header_fields_too_large: 431,
      rate_limit_exceeded: 429,
      token_budget_exceeded: 429,
      cost_budget_exceeded: 429,
      tool_budget_exceeded: 429,
      concurrency_limit_exceeded: 429,
      internal_error: 500,
      agent_error: 502,
      agent_task_failed: 502,
      agent_bad_response: 502,
      agent_unavailable: 503,
      store_unavailable: 503,
    });
    for (const { message } of Object.values(ERROR_TYPES)) expect(message.length).toBeGreaterThan(10);
    expect(Object.keys(STREAM_ERROR_TYPES).sort()).toEqual(['agent_bad_response', 'agent_error', 'agent_task_failed', 'shutting_down', 'stream_timeout', 'upstream_error', 'upstream_timeout']);
  });

  it('renders the one JSON envelope, with param only when set', () => {
    expect(JSON.parse(errorBody(new GatewayError('invalid_request', { param: 'temperature', message: 'bad' }), 'r1'))).toEqual({
      error: { type: 'invalid_request', message: 'bad', request_id: 'r1', param: 'temperature' },
    });
    expect(JSON.parse(errorBody(new GatewayError('not_found'), 'r2'))).toEqual({ error: { type: 'not_found', message: ERROR_TYPES.not_found.message, request_id: 'r2' } });
    const error = new GatewayError('rate_limit_exceeded', { retryAfterSeconds: 3 });
    expect([error.status, error.retryAfterSeconds]).toEqual([429, 3]);
  });

  it('renders a final stream error event', () => {
    const text = streamErrorEvent('upstream_timeout', 'r3');
    expect(text.startsWith('event: error\ndata: ')).toBe(true);
    expect(text.endsWith('\n\n')).toBe(true);
    expect(JSON.parse(text.slice('event: error\ndata: '.length))).toEqual({ type: 'upstream_timeout', message: STREAM_ERROR_TYPES.upstream_timeout, request_id: 'r3' });
  });
});
