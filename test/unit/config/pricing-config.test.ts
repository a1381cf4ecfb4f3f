// `pricing` and an agent's `model` (docs/configuration.md "pricing"), and the cost rule they
// feed (src/request/cost.ts; decision 0066): USD per 1,000 tokens_used by model, `default`
// for any other, null when nothing prices the answer.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.js';
import { costUsd, settleAnswerCost } from '../../../src/request/cost.js';
import { configProblems as problems, MINIMAL_CONFIG as MINIMAL } from '../../helpers/config-problems.js';

const parse = (text: string) => parseConfigText(text, 'test.yaml', {});

describe('pricing config', () => {
  it('is absent by default: no cost is computed', () => {
    const config = parse(MINIMAL);
    expect(config.pricing).toBeNull();
    expect(config.agents.get('support')!.model).toBeUndefined();
    expect(costUsd(1000, 'm', config.pricing)).toBeNull();
  });

  it('reads prices by model, `default` apart, and an agent model', () => {
    const config = parse(`pricing:\n  default: 0.002\n  big-model: 0.012\n  free: 0\nagents:\n  support:\n    upstream: http://127.0.0.1:8081/api/v1\n    model: big-model\n`);
    expect(config.pricing).toEqual({ models: new Map([['big-model', 0.012], ['free', 0]]), default: 0.002 });
    expect(config.agents.get('support')!.model).toBe('big-model');
  });

  it('refuses negative, infinite and non-number prices, empty or over-long model names, an empty map', () => {
    expect(problems(`${MINIMAL}pricing: { default: -1 }\n`)).toEqual([expect.stringMatching(/^pricing\.default: /)]);
    expect(problems(`${MINIMAL}pricing: { m: .inf }\n`)).toEqual([expect.stringMatching(/^pricing\.m: /)]);
    expect(problems(`${MINIMAL}pricing: { m: "0.1" }\n`)).toEqual([expect.stringMatching(/^pricing\.m: /)]);
    expect(problems(`${MINIMAL}pricing: { "${'m'.repeat(129)}": 1 }\n`)[0]).toMatch(/^pricing/);
    expect(problems(`${MINIMAL}pricing: { "": 1 }\n`)[0]).toMatch(/^pricing/);
    expect(problems(`${MINIMAL}pricing: {}\n`)).toEqual([expect.stringMatching(/^pricing: /)]);
    expect(problems(`agents:\n  support:\n    upstream: http://127.0.0.1:8081/api/v1\n    model: ""\n`)).toEqual([expect.stringMatching(/^agents\.support\.model: /)]);
    expect(problems(`agents:\n  support:\n    upstream: http://127.0.0.1:8081/api/v1\n    model: "${'m'.repeat(129)}"\n`)).toEqual([expect.stringMatching(/^agents\.support\.model: /)]);
  });
});

describe('costUsd', () => {
  const pricing = { models: new Map([['big-model', 0.012]]), default: 0.002 };
  it('is tokens / 1000 x the model price, `default` for any other model and for an unknown one', () => {
    expect(costUsd(1500, 'big-model', pricing)).toBeCloseTo(0.018, 15);
    expect(costUsd(1500, 'other', pricing)).toBeCloseTo(0.003, 15);
    expect(costUsd(1500, null, pricing)).toBeCloseTo(0.003, 15);
    expect(costUsd(0, 'big-model', pricing)).toBe(0);
  });

  it('is null without pricing, without a count, or without a price for the model', () => {
    expect(costUsd(1500, 'big-model', null)).toBeNull();
    expect(costUsd(null, 'big-model', pricing)).toBeNull();
    expect(costUsd(1500, 'other', { models: pricing.models, default: null })).toBeNull();
  });

  it('settles the model from the agent when the answer names none, and never over the answer', () => {
    const named = { upstreamStatus: 200, tokensUsed: 1000, model: 'big-model' as string | null, costUsd: null as number | null };
    settleAnswerCost(named, 'other', pricing);
    expect(named).toEqual({ upstreamStatus: 200, tokensUsed: 1000, model: 'big-model', costUsd: 0.012 });
    const unnamed = { upstreamStatus: 200, tokensUsed: 1000, model: null as string | null, costUsd: null as number | null };
    settleAnswerCost(unnamed, 'big-model', pricing);
    settleAnswerCost(unnamed, 'big-model', pricing);
    expect(unnamed).toEqual({ upstreamStatus: 200, tokensUsed: 1000, model: 'big-model', costUsd: 0.012 });
  });

  it('names no model for a request the runner never answered (a refusal, an error answer)', () => {
    for (const upstreamStatus of [0, 503, 429]) {
      const refused = { upstreamStatus, tokensUsed: null, model: null as string | null, costUsd: null as number | null };
      settleAnswerCost(refused, 'big-model', pricing);
      expect(refused).toEqual({ upstreamStatus, tokensUsed: null, model: null, costUsd: null });
    }
  });
});
