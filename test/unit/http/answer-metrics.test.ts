// The answer's facts as metrics (src/http/answer-metrics.ts; decision 0066): the verdict of
// each tool call against the tools the runner was given, the bounded `tool` label, and the
// cost counter. Read from the one registry, as /metrics serves it.
import { describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../../src/config/schema.js';
import { countAnswerFacts, MAX_TOOL_LABELS, toolLabel } from '../../../src/http/answer-metrics.js';
import { registry } from '../../../src/metrics/metrics.js';
import { RequestState } from '../../../src/request/request-state.js';
import { parseMetrics, sumSamples } from '../../helpers/metrics-text.js';

const base: AgentConfig = {
  id: 'unit-listed',
  protocol: 'agent-chat',
  upstream: 'http://127.0.0.1:1/api/v1',
  host: undefined,
  headersTimeoutMs: 1,
  tools: new Set(['search', 'calculator']),
  maxTokens: 1,
  upstreams: [{ url: 'http://127.0.0.1:1/api/v1', weight: 1 }],
  outlier: { consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000, maxEjectedPercent: 50 },
  healthCheck: undefined,
};

async function count(name: string, labels: Record<string, string>): Promise<number> {
  return sumSamples(parseMetrics(await registry.metrics()), name, labels);
}

function answered(toolCalls: string[] | null, toolsGiven: readonly string[] | null, costUsd: number | null): RequestState {
  const state = new RequestState(undefined, '127.0.0.1', 0, 0);
  state.toolCalls = toolCalls;
  state.toolsGiven = toolsGiven;
  state.costUsd = costUsd;
  return state;
}

describe('answer metrics', () => {
  it('counts a call of a tool the runner was not given as outside_scope; with no list given, allowed', async () => {
    countAnswerFacts(answered(['search', 'calculator', 'search'], ['search'], 0.25), base);
    countAnswerFacts(answered(['calculator'], null, null), base);
    expect(await count('agentgw_tool_calls_total', { agent: 'unit-listed', tool: 'search', verdict: 'allowed' })).toBe(2);
    expect(await count('agentgw_tool_calls_total', { agent: 'unit-listed', tool: 'calculator', verdict: 'outside_scope' })).toBe(1);
    expect(await count('agentgw_tool_calls_total', { agent: 'unit-listed', tool: 'calculator', verdict: 'allowed' })).toBe(1);
    expect(await count('agentgw_cost_usd_total', { agent: 'unit-listed' })).toBe(0.25);
  });

  it('bounds the tool label: the allow-list names, else other; without one, the first MAX_TOOL_LABELS names, then other', () => {
    expect(toolLabel(base, 'search')).toBe('search');
    expect(toolLabel(base, 'rm_rf')).toBe('other');
    const open: AgentConfig = { ...base, id: 'unit-open', tools: undefined };
    const labels = new Set(Array.from({ length: MAX_TOOL_LABELS + 10 }, (_, k) => toolLabel(open, `t${k}`)));
    expect(labels.size).toBe(MAX_TOOL_LABELS + 1);
    expect(labels.has('other')).toBe(true);
    // A name seen before keeps its label; a runner's own "other" is the bucket, not a new label.
    expect(toolLabel(open, 't0')).toBe('t0');
    expect(toolLabel(open, `t${MAX_TOOL_LABELS + 5}`)).toBe('other');
    expect(toolLabel({ ...open, id: 'unit-open-2' }, 'other')).toBe('other');
  });

  it('counts nothing without an agent, tool calls or a cost', async () => {
    const before = await count('agentgw_cost_usd_total', {});
    countAnswerFacts(answered(['search'], null, 1), undefined);
    countAnswerFacts(answered(null, null, null), base);
    countAnswerFacts(answered(null, null, 0), base);
    expect(await count('agentgw_cost_usd_total', {})).toBe(before);
  });
});
