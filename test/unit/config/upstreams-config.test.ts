// The agents' upstream settings (docs/upstreams.md): `upstream` as the shorthand of
// `upstreams`, their defaults, and the refusals.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../../../src/config/load-config.js';

function problems(text: string): string[] {
  try {
    parseConfigText(text, 'test.yaml', {});
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected the config to be refused');
}

describe('agents.<id>.upstreams', () => {
  it('reads `upstream` as one target of weight 1, with the outlier defaults and no health check', () => {
    const agent = parseConfigText('agents:\n  a:\n    upstream: http://127.0.0.1:8081/api/v1/\n', 't.yaml', {}).agents.get('a')!;
    expect(agent.upstream).toBe('http://127.0.0.1:8081/api/v1');
    expect(agent.upstreams).toEqual([{ url: 'http://127.0.0.1:8081/api/v1', weight: 1 }]);
    expect(agent.outlier).toEqual({ consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000, maxEjectedPercent: 50 });
    expect(agent.healthCheck).toBeUndefined();
    expect(agent.queue).toBeUndefined();
  });

  it('reads a list of weighted targets, a queue, outlier settings and a health check', () => {
    const text = [
      'agents:',
      '  a:',
      '    upstreams:',
      '      - { url: http://10.0.0.1:8081/api/v1, weight: 3 }',
      '      - { url: http://10.0.0.2:8081/api/v1 }',
      '    max_connections: 10',
      '    queue: 20',
      '    outlier: { consecutive_failures: 2, base_ejection: 5s, max_ejection: 1m, max_ejected_percent: 34 }',
      '    health_check: { path: /healthz, interval: 2s }',
      '',
    ].join('\n');
    const agent = parseConfigText(text, 't.yaml', {}).agents.get('a')!;
    expect(agent.upstream).toBe('http://10.0.0.1:8081/api/v1');
    expect(agent.upstreams).toEqual([
      { url: 'http://10.0.0.1:8081/api/v1', weight: 3 },
      { url: 'http://10.0.0.2:8081/api/v1', weight: 1 },
    ]);
    expect(agent.queue).toBe(20);
    expect(agent.outlier).toEqual({ consecutiveFailures: 2, baseEjectionMs: 5_000, maxEjectionMs: 60_000, maxEjectedPercent: 34 });
    expect(agent.healthCheck).toEqual({ path: '/healthz', intervalMs: 2_000, timeoutMs: 2_000, healthy: 2, unhealthy: 3 });
  });

  it('refuses both or neither of upstream and upstreams, a repeated origin, a queue without max_connections, bad weights and paths', () => {
    expect(problems('agents:\n  a:\n    upstream: http://x/api/v1\n    upstreams: [ { url: http://y/api/v1 } ]\n')[0]).toMatch(/^agents\.a\.upstreams: set either "upstream" .* not both/);
    expect(problems('agents:\n  a:\n    timeout: 5s\n')[0]).toMatch(/^agents\.a\.upstream: set "upstream"/);
    expect(problems('agents:\n  a:\n    upstreams: [ { url: http://x:1/a }, { url: http://x:1/b } ]\n')[0]).toMatch(/^agents\.a\.upstreams\.1\.url: origin http:\/\/x:1 is listed twice/);
    expect(problems('agents:\n  a:\n    upstream: http://x/api/v1\n    queue: 5\n')[0]).toMatch(/^agents\.a\.queue: .*set max_connections too/);
    expect(problems('agents:\n  a:\n    upstreams: [ { url: http://x/api/v1, weight: 0 } ]\n')[0]).toMatch(/^agents\.a\.upstreams\.0\.weight/);
    expect(problems('agents:\n  a:\n    upstreams: []\n')[0]).toMatch(/^agents\.a\.upstreams/);
    expect(problems('agents:\n  a:\n    upstream: http://x/api/v1\n    health_check: { path: healthz }\n')[0]).toMatch(/^agents\.a\.health_check\.path: must be a path/);
  });
});
