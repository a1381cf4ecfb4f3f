// The front door's JSON-RPC codec (src/mcp/json-rpc.ts): one typed decoder for what clients and
// servers send, one encoder for what the gateway answers.
import { describe, expect, it } from 'vitest';
import { decodeMessage, encodeError, encodeResult, idOf, JsonRpcDecodeError } from '../../../src/mcp/json-rpc.js';

function refusal(value: unknown): string {
  try {
    decodeMessage(value);
  } catch (error) {
    if (error instanceof JsonRpcDecodeError) return `${error.code} ${error.message}`;
    throw error;
  }
  return 'decoded';
}

describe('decodeMessage', () => {
  it('reads requests, notifications and responses by their fields', () => {
    expect(decodeMessage({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } })).toEqual({ kind: 'request', id: 1, method: 'tools/call', params: { name: 'x' } });
    expect(decodeMessage({ jsonrpc: '2.0', method: 'notifications/initialized' })).toEqual({ kind: 'notification', method: 'notifications/initialized', params: undefined });
    expect(decodeMessage({ jsonrpc: '2.0', id: 'a', result: { ok: true } })).toEqual({ kind: 'response', id: 'a', result: { ok: true } });
    expect(decodeMessage({ jsonrpc: '2.0', id: null, error: { code: -1, message: 'no' } })).toEqual({ kind: 'response', id: null, error: { code: -1, message: 'no', data: undefined } });
  });

  it('refuses what is not a message with -32600 and says why', () => {
    expect(refusal([])).toMatch(/^-32600 .*object/);
    expect(refusal({ jsonrpc: '1.0', id: 1, method: 'ping' })).toMatch(/^-32600 .*"jsonrpc"/);
    expect(refusal({ jsonrpc: '2.0', id: 1, method: '' })).toMatch(/^-32600 .*"method"/);
    expect(refusal({ jsonrpc: '2.0', id: 1, method: 'x'.repeat(257) })).toMatch(/^-32600/);
    expect(refusal({ jsonrpc: '2.0', id: {}, method: 'ping' })).toMatch(/^-32600 .*"id"/);
    expect(refusal({ jsonrpc: '2.0', id: 1, method: 'ping', params: [1, 2] })).toMatch(/^-32600 .*"params"/);
    expect(refusal({ jsonrpc: '2.0', id: 1, method: 7 })).toMatch(/^-32600 .*"method" must be a string/);
    expect(refusal({ jsonrpc: '2.0', result: 1 })).toMatch(/^-32600 .*"id"/);
    expect(refusal({ jsonrpc: '2.0', id: 1, error: { code: 'x', message: 'y' } })).toMatch(/^-32600/);
    expect(refusal({ jsonrpc: '2.0', id: Number.NaN, method: 'ping' })).toMatch(/^-32600/);
  });

  it('idOf reads an id only where a valid one is', () => {
    expect(idOf({ id: 5 })).toBe(5);
    expect(idOf({ id: 'x' })).toBe('x');
    expect(idOf({ id: {} })).toBeNull();
    expect(idOf('nope')).toBeNull();
  });
});

describe('encoders', () => {
  it('write errors with the named code and optional data, and results', () => {
    expect(JSON.parse(encodeError(3, 'invalid_params', 'Unknown tool: x'))).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'Unknown tool: x' } });
    expect(JSON.parse(encodeError(null, 'server_error', 'limited', { type: 'rate_limit_exceeded', retry_after_ms: 10 }))).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'limited', data: { type: 'rate_limit_exceeded', retry_after_ms: 10 } },
    });
    expect(JSON.parse(encodeResult('a', { tools: [] }))).toEqual({ jsonrpc: '2.0', id: 'a', result: { tools: [] } });
  });
});
