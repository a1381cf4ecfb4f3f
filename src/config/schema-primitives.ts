// Value schemas every part of the config shares: durations (to milliseconds), ports, hosts, and
// an upstream base URL.
import { z } from 'zod';
import { parseDurationMs } from './duration.js';

export const duration = z
  .union([z.string(), z.number()])
  .transform((value, ctx) => {
    const ms = typeof value === 'number' ? undefined : parseDurationMs(value);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `expected a duration with a unit such as "100ms", "15s", "1m", "1h" or "1d", got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    return ms;
  });

export const positiveDuration = duration.refine((ms) => ms > 0, { message: 'must be greater than zero' });

export const port = z.coerce.number().int().min(0).max(65535);
export const host = z.string().min(1);

export const upstreamUrl = z
  .string()
  .refine((text) => {
    try {
      const url = new URL(text);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '';
    } catch {
      return false;
    }
  }, { message: 'must be an http:// or https:// base URL without query or fragment, e.g. http://127.0.0.1:8081/api/v1' })
  .transform((text) => text.replace(/\/+$/, ''));

/**
 * For a check across fields (superRefine) that must run even when another field of the same
 * mapping has a problem, so `config check` reports both at once (zod skips such a check by
 * default). The check then sees the other fields as given, so it must not assume their types.
 */
export const evenWithOtherProblems = { when: (payload: { value: unknown }) => typeof payload.value === 'object' && payload.value !== null };

/** `value` as a mapping of keys, or undefined when it is not one (for checks that see unvalidated input). */
export function asMapping(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
