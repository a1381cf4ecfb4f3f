// What an answer without a valid count is charged in dollars (src/request/cost.ts,
// estimatedCostUsd; issue 45, H3-05): an answer left before it named its model is priced at
// the agent's declared model, or at the highest price that could apply; never free.
import { describe, expect, it } from 'vitest';
import type { Pricing } from '../../../src/config/pricing-schema.js';
import { estimatedCostUsd, highestPrice } from '../../../src/request/cost.js';

const withDefault: Pricing = { models: new Map([['cheap', 0.001], ['big-model', 0.05]]), default: 0.002 };
const withoutDefault: Pricing = { models: new Map([['cheap', 0.001], ['big-model', 0.05]]), default: null };

describe('estimatedCostUsd', () => {
  it('prices an answer read to its end at its model (or default), as the audit does', () => {
    expect(estimatedCostUsd(1000, { model: 'cheap', answerRead: true }, withDefault)).toBe(0.001);
    expect(estimatedCostUsd(1000, { model: null, answerRead: true }, withDefault)).toBe(0.002);
    expect(estimatedCostUsd(1000, { model: null, answerRead: true }, withoutDefault)).toBeNull();
  });

  it('prices an answer left before it named a model at the highest price, not at default or nothing', () => {
    expect(estimatedCostUsd(1000, { model: null, answerRead: false }, withDefault)).toBe(0.05);
    expect(estimatedCostUsd(1000, { model: null, answerRead: false }, withoutDefault)).toBe(0.05);
  });

  it("prices it at the agent's declared model when that has a price, else at the highest", () => {
    expect(estimatedCostUsd(1000, { model: 'cheap', answerRead: false }, withoutDefault)).toBe(0.001);
    expect(estimatedCostUsd(1000, { model: 'unlisted', answerRead: false }, withDefault)).toBe(0.002);
    expect(estimatedCostUsd(1000, { model: 'unlisted', answerRead: false }, withoutDefault)).toBe(0.05);
  });

  it('charges nothing without pricing or tokens', () => {
    expect(estimatedCostUsd(1000, { model: null, answerRead: false }, null)).toBeNull();
    expect(estimatedCostUsd(0, { model: null, answerRead: false }, withDefault)).toBeNull();
  });

  it('finds the highest price among the models and default', () => {
    expect(highestPrice(withDefault)).toBe(0.05);
    expect(highestPrice({ models: new Map(), default: 0.3 })).toBe(0.3);
    expect(highestPrice({ models: new Map([['a', 0.4]]), default: 0.7 })).toBe(0.7);
  });
});
