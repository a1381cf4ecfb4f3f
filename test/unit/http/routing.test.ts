import { describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../../src/config/schema.js';
import { GatewayError } from '../../../src/errors.js';
import { buildRouteTable, matchRoute } from '../../../src/http/routing.js';

const support: AgentConfig = { id: 'support', protocol: 'agent-chat', upstream: 'http://127.0.0.1:1/api/v1', host: 'support.example.com', headersTimeoutMs: 1, tools: undefined, maxTokens: 1, upstreams: [{ url: 'http://127.0.0.1:1/api/v1', weight: 1 }], outlier: { consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000, maxEjectedPercent: 50 }, healthCheck: undefined };
const sales: AgentConfig = { ...support, id: 'sales', host: undefined };
const table = buildRouteTable(new Map([['support', support], ['sales', sales]]));

function errorOf(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (error) {
    if (error instanceof GatewayError) return error;
  }
  throw new Error('expected a GatewayError');
}

describe('matchRoute', () => {
  it('matches path-based routes', () => {
    expect(matchRoute(table, 'POST', '/agents/sales/api/v1/chat', 'gw')).toEqual({ agent: sales, route: 'chat' });
    expect(matchRoute(table, 'POST', '/agents/support/api/v1/chat/stream?x=1', 'gw')).toEqual({ agent: support, route: 'chat/stream' });
  });

  it('matches host-based routes, ignoring the port and case', () => {
    expect(matchRoute(table, 'POST', '/api/v1/chat', 'Support.Example.com:8080')).toEqual({ agent: support, route: 'chat' });
    expect(errorOf(() => matchRoute(table, 'POST', '/api/v1/chat', 'other.example.com')).type).toBe('not_found');
  });

  it('answers 404 for unknown agents and paths, 405 with Allow for other methods', () => {
    for (const url of ['/agents/nope/api/v1/chat', '/agents/sales/api/v2/chat', '/agents/sales/api/v1/chat/', '/', '/agents//api/v1/chat']) {
      expect(errorOf(() => matchRoute(table, 'POST', url, 'gw')).type).toBe('not_found');
    }
    const error = errorOf(() => matchRoute(table, 'GET', '/agents/sales/api/v1/chat', 'gw'));
    expect(error.type).toBe('method_not_allowed');
    expect(error.status).toBe(405);
    expect(error.headers).toEqual({ Allow: 'POST' });
  });
});
