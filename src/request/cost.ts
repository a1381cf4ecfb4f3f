// An answer's cost in dollars (docs/policy.md "Cost in dollars"; decision 0066):
// tokens_used / 1000 x the price of the model that answered. The audit record keeps the full
// double; usage rollups add whole micro-dollars (src/audit/usage-buckets.ts), integers, so
// counters summed by HINCRBY or in a file stay exact however many records they take.
import type { Pricing } from '../config/pricing-schema.js';

/**
 * The cost of `tokensUsed` reported tokens answered by `model`: null when pricing is not
 * configured, the count is unknown, or the model has no price (not listed, and no `default`).
 * An unknown model (null) is priced at `default`.
 */
export function costUsd(tokensUsed: number | null, model: string | null, pricing: Pricing | null): number | null {
  if (pricing === null || tokensUsed === null) return null;
  const price = (model === null ? undefined : pricing.models.get(model)) ?? pricing.default;
  if (price === null) return null;
  return (tokensUsed / 1000) * price;
}

/** The highest price `pricing` names (any model's, or `default`), computed once per pricing. */
const highestPrices = new WeakMap<Pricing, number | null>();

export function highestPrice(pricing: Pricing): number | null {
  let highest = highestPrices.get(pricing);
  if (highest === undefined) {
    highest = pricing.default;
    for (const price of pricing.models.values()) if (highest === null || price > highest) highest = price;
    highestPrices.set(pricing, highest);
  }
  return highest;
}

/**
 * What an answer without a valid count is charged in dollars: `tokens` (the estimate of
 * what was relayed, token-charge.ts) at the price of its model. An answer that ended before
 * it could name its model (a client leaving a stream before `done`, a body not read to its
 * end) is priced at the model known so far (the agent's declared `model`, settleAnswerCost),
 * or, when that has no price, at the highest price that could apply: leaving early must not
 * make an answer free, nor cheaper than the model its end would have named.
 */
export function estimatedCostUsd(tokens: number, state: EstimatedCostFacts, pricing: Pricing | null): number | null {
  if (pricing === null || tokens <= 0) return null;
  const known = costUsd(tokens, state.model, pricing);
  // Unread, the model can only be the agent's declared one.
  if (state.answerRead || (state.model !== null && known !== null)) return known;
  const highest = highestPrice(pricing);
  return highest === null ? null : (tokens / 1000) * highest;
}

/**
 * Settles what the answer cost, once the answer is in: the model of a runner's answer (2xx)
 * falls back to the agent's configured `model` (a request the runner never answered names
 * no model), then the cost follows from the reported tokens. Idempotent: called as the
 * response ends (the audit record made then), and when it closes unless that record was made.
 */
export function settleAnswerCost(state: AnswerCostFacts, agentModel: string | undefined, pricing: Pricing | null): void {
  if (state.model === null && agentModel !== undefined && state.upstreamStatus >= 200 && state.upstreamStatus < 300) state.model = agentModel;
  state.costUsd = costUsd(state.tokensUsed, state.model, pricing);
}

/** The request state's fields settleAnswerCost reads and writes. */
export interface AnswerCostFacts {
  readonly upstreamStatus: number;
  readonly tokensUsed: number | null;
  model: string | null;
  costUsd: number | null;
}

/** The request state's fields estimatedCostUsd reads. */
export interface EstimatedCostFacts {
  /** The model settled so far (settleAnswerCost): the answer's, else the agent's declared one. */
  readonly model: string | null;
  /** The relay read the answer to its end (a `/chat` body, a stream's `done`): its model, if it names one, is known. */
  readonly answerRead: boolean;
}
