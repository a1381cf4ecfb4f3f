// `pricing` (docs/configuration.md "pricing"; docs/design.md, "Agent-aware policy"): USD per
// 1,000 `tokens_used`, by the model the answer names, with `default` for any other model.
// Read into a map once, so a request looks its price up instead of walking the YAML's shape.
import { z } from 'zod';

/** Model names as the answer's `metadata.model` and an agent's `model` may give them. */
export const MAX_MODEL_CHARS = 128;

const price = z.number().finite().min(0);

export const pricingSchema = z
  .record(z.string().min(1).max(MAX_MODEL_CHARS), price)
  .refine((prices) => Object.keys(prices).length > 0, { message: 'name at least one model (or `default`), or leave pricing out' })
  .transform((prices): Pricing => {
    const models = new Map<string, number>();
    let fallback: number | null = null;
    for (const [model, usd] of Object.entries(prices)) {
      if (model === 'default') fallback = usd;
      else models.set(model, usd);
    }
    return { models, default: fallback };
  });

/** The configured prices: USD per 1,000 tokens_used. */
export interface Pricing {
  readonly models: ReadonlyMap<string, number>;
  /** The price of any model not in `models` (and of an answer whose model is unknown); null: such answers have no cost. */
  readonly default: number | null;
}
