// The Agents page's reader of /metrics (web/src/usage/prometheus-text.ts), against the text
// prom-client writes.
import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseSamples, sumOf } from '../../../web/src/usage/prometheus-text.js';

describe('parseSamples', () => {
  it('reads the named samples with their labels from prom-client output', async () => {
    const registry = new Registry();
    const errors = new Counter({ name: 'agentgw_upstream_errors_total', help: 'h', labelNames: ['agent', 'kind'], registers: [registry] });
    const streams = new Gauge({ name: 'agentgw_active_streams', help: 'h', registers: [registry] });
    new Counter({ name: 'agentgw_other_total', help: 'h', registers: [registry] }).inc(7);
    errors.inc({ agent: 'support', kind: 'connect' }, 3);
    errors.inc({ agent: 'support', kind: 'reset' });
    errors.inc({ agent: 'we"ird\\agent', kind: 'connect' }, 2);
    streams.set(4);
    const samples = parseSamples(await registry.metrics(), new Set(['agentgw_upstream_errors_total', 'agentgw_active_streams']));
    expect(samples).toHaveLength(4);
    expect(sumOf(samples, 'agentgw_active_streams')).toBe(4);
    expect(sumOf(samples, 'agentgw_upstream_errors_total', { agent: 'support' })).toBe(4);
    expect(sumOf(samples, 'agentgw_upstream_errors_total', { kind: 'connect' })).toBe(5);
    expect(sumOf(samples, 'agentgw_upstream_errors_total', { agent: 'we"ird\\agent' })).toBe(2);
    expect(sumOf(samples, 'agentgw_other_total')).toBe(0);
  });

  it('skips comments, blank lines and values that are not numbers', () => {
    const text = '# HELP x h\n# TYPE x gauge\n\nx 1\nx{a="b"} NaNish\nx{a="c"} 2.5\n';
    expect(parseSamples(text, new Set(['x']))).toEqual([
      { name: 'x', labels: {}, value: 1 },
      { name: 'x', labels: { a: 'c' }, value: 2.5 },
    ]);
  });
});
