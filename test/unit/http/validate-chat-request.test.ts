import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { AgentConfig } from '../../../src/config/schema.js';
import { GatewayError } from '../../../src/errors.js';
import { parseJsonBody, validateChatRequest } from '../../../src/http/validate-chat-request.js';

const agent: AgentConfig = { id: 'support', protocol: 'agent-chat', upstream: 'http://127.0.0.1:1/api/v1', host: undefined, headersTimeoutMs: 1000, tools: new Set(['search', 'calculator']), maxTokens: 100, upstreams: [{ url: 'http://127.0.0.1:1/api/v1', weight: 1 }], outlier: { consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000, maxEjectedPercent: 50 }, healthCheck: undefined };
const limits = { maxMessageChars: 10 };

function rejection(body: unknown, withAgent: AgentConfig = agent): { type: string; param: string | undefined } {
  try {
    validateChatRequest(body, withAgent, limits);
  } catch (error) {
    if (error instanceof GatewayError) return { type: error.type, param: error.param };
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('validateChatRequest', () => {
  it('accepts a full valid request and returns the context ids', () => {
    expect(
      validateChatRequest({ message: 'hi', context: { user_id: 'u1', session_id: 's1' }, tools: ['search'], temperature: 0.7, max_tokens: 100, extra: true }, agent, limits),
    ).toEqual({ userId: 'u1', sessionId: 's1', tools: ['search'] });
    expect(validateChatRequest({ message: 'x' }, agent, limits)).toEqual({ userId: null, sessionId: null, tools: null });
  });

  it.each([
    [[], 'body'],
    ['text', 'body'],
    [null, 'body'],
    [{}, 'message'],
    [{ message: 3 }, 'message'],
    [{ message: '' }, 'message'],
    [{ message: '12345678901' }, 'message'],
    [{ message: 'hi', context: [] }, 'context'],
    [{ message: 'hi', context: 'c' }, 'context'],
    [{ message: 'hi', context: { user_id: 1 } }, 'context.user_id'],
    [{ message: 'hi', context: { session_id: {} } }, 'context.session_id'],
    [{ message: 'hi', context: { user_id: 'ha_NuAYPJzOVplfcLfgmT17F2BUwUxhnAwb1P8hzo' } }, 'context.user_id'],
    [{ message: 'hi', context: { session_id: 'x ha_NuAYPJzOVplfcLfgmT17F2BUwUxhnAwb1P8hzo' } }, 'context.session_id'],
    [{ message: 'hi', tools: 'search' }, 'tools'],
    [{ message: 'hi', tools: [1] }, 'tools[0]'],
    [{ message: 'hi', tools: ['search', 'search'] }, 'tools[1]'],
    [{ message: 'hi', tools: ['search', 'shell'] }, 'tools[1]'],
    [{ message: 'hi', temperature: '0.5' }, 'temperature'],
    [{ message: 'hi', temperature: -0.1 }, 'temperature'],
    [{ message: 'hi', temperature: 2.01 }, 'temperature'],
    [{ message: 'hi', max_tokens: 0 }, 'max_tokens'],
    [{ message: 'hi', max_tokens: 101 }, 'max_tokens'],
    [{ message: 'hi', max_tokens: 1.5 }, 'max_tokens'],
    [{ message: 'hi', max_tokens: '5' }, 'max_tokens'],
  ])('rejects %j naming %s', (body, param) => {
    expect(rejection(body)).toEqual({ type: 'invalid_request', param });
  });

  it('counts characters as code points, so 10 emoji fit a 10-character limit', () => {
    expect(validateChatRequest({ message: '🌍'.repeat(10) }, agent, limits)).toEqual({ userId: null, sessionId: null, tools: null });
    expect(rejection({ message: '🌍'.repeat(11) }).param).toBe('message');
  });

  it('allows any tool when the agent has no allow-list', () => {
    expect(validateChatRequest({ message: 'hi', tools: ['anything'] }, { ...agent, tools: undefined }, limits)).toEqual({ userId: null, sessionId: null, tools: ['anything'] });
  });

  it('never throws anything but a GatewayError, whatever the JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        try {
          validateChatRequest(value, agent, limits);
        } catch (error) {
          expect(error).toBeInstanceOf(GatewayError);
          expect((error as GatewayError).type).toBe('invalid_request');
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('parseJsonBody', () => {
  it.each([
    [Buffer.alloc(0), 'empty'],
    [Buffer.from('{"message": "hi"'), 'truncated'],
    [Buffer.from([0x7b, 0x22, 0x6d, 0xff, 0xfe, 0x22, 0x7d]), 'invalid UTF-8'],
    [Buffer.from('hello'), 'not JSON'],
  ])('rejects %s as invalid_json (%s)', (body) => {
    expect(() => parseJsonBody(body, { maxJsonDepth: 64 })).toThrow(GatewayError);
    try {
      parseJsonBody(body, { maxJsonDepth: 64 });
    } catch (error) {
      expect((error as GatewayError).type).toBe('invalid_json');
    }
  });

  it('refuses nesting deeper than the limit before parsing, and takes it up to the limit', () => {
    const deep = Buffer.from('['.repeat(100_000) + ']'.repeat(100_000));
    expect(() => parseJsonBody(deep, { maxJsonDepth: 64 })).toThrow(expect.objectContaining({ type: 'invalid_json', message: 'The request body nests objects and arrays more than 64 levels deep.' }));
    const atLimit = Buffer.from('['.repeat(64) + ']'.repeat(64));
    expect(JSON.stringify(parseJsonBody(atLimit, { maxJsonDepth: 64 }))).toBe(atLimit.toString());
  });
});
