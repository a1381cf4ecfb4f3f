// Plans and a key's own limits (docs/rate-limits.md): request windows, token budgets and the
// stream concurrency cap, read into the shape the limiter takes.
import { z } from 'zod';
import { duration, positiveDuration } from './schema-primitives.js';

export const PLAN_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const windowSchema = z.strictObject({
  requests: z.number().int().min(1),
  per: positiveDuration,
  name: z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"').optional(),
});

const WINDOW_NAMES: Record<number, string> = { 1_000: 'second', 60_000: 'minute', 3_600_000: 'hour', 86_400_000: 'day' };

const tokenWindowSchema = z.strictObject({
  tokens: z.number().int().min(1),
  per: positiveDuration,
  name: z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"').optional(),
});

type WindowInput = z.output<typeof windowSchema>;
type TokenWindowInput = z.output<typeof tokenWindowSchema>;

/** One window as the limiter takes it; `tokens: true` on a token budget (its figures count tokens). */
export interface RateWindow {
  name: string;
  limit: number;
  windowMs: number;
  tokens?: true;
  /** Set on an end user's window: counted per (subject, end user), refusing with `param: "context.user_id"`. */
  endUser?: true;
}

/**
 * A plan's end-user policy (docs/design.md, "Agent-aware policy"): windows and budgets for EACH end user of
 * the subject, named with a `user-` prefix (the IETF headers' `"user-minute"`).
 */
export interface EndUserLimits {
  requests: readonly RateWindow[];
  tokens: readonly RateWindow[];
  /** true: a request without `context.user_id` is 400 `invalid_request`. */
  require: boolean;
  /** The subject's `windows` then the end user's: the one list a request is counted in, in this order. */
  windows: readonly RateWindow[];
}

/**
 * A plan's (or a key's) resolved limits, built once here: the limiter and the rest of the
 * gateway read each dimension by its field, never by its place in a list. The dimensions of
 * docs/design.md, "Agent-aware policy" come as fields of their own (`endUser`, `toolCalls`,
 * `cost`; docs/rate-limits.md, "End-user windows").
 */
export interface Limits {
  /** Request windows. */
  requests: readonly RateWindow[];
  /** Token budgets: admission while a budget has tokens left, charged after the answer (docs/rate-limits.md "Token budgets"). */
  tokens: readonly RateWindow[];
  /** `requests` then `tokens`: the one list the limiter counts and reports statuses in, in this order. */
  windows: readonly RateWindow[];
  /** The stream concurrency cap (undefined: none). */
  concurrency?: StreamCap | undefined;
  /** Per end user of the subject (undefined: no end-user policy; the request path is as without it). */
  endUser?: EndUserLimits | undefined;
}

function requestWindows(inputs: readonly WindowInput[]): RateWindow[] {
  return inputs.map((w) => ({ name: w.name ?? WINDOW_NAMES[w.per] ?? `${w.per / 1000}s`, limit: w.requests, windowMs: w.per }));
}

/** Token windows are named `tokens-<period>` unless named. */
function tokenWindows(inputs: readonly TokenWindowInput[]): RateWindow[] {
  return inputs.map((t) => ({ name: t.name ?? `tokens-${WINDOW_NAMES[t.per] ?? `${t.per / 1000}s`}`, limit: t.tokens, windowMs: t.per, tokens: true }));
}

const endUserSchema = z.strictObject({
  windows: z.array(windowSchema).max(16).default([]),
  tokens: z.array(tokenWindowSchema).max(16).default([]),
  require: z.boolean().default(false),
});

type EndUserInput = z.output<typeof endUserSchema>;

/** An end user's windows, named `user-<name>`, flagged as theirs. */
function endUserWindows(windows: readonly RateWindow[]): RateWindow[] {
  return windows.map((w) => ({ ...w, name: `user-${w.name}`, endUser: true }));
}

/** The end-user part as the limiter takes it; its combined list is built with the subject's. */
function endUserParts(input: EndUserInput): Omit<EndUserLimits, 'windows'> {
  return { requests: endUserWindows(requestWindows(input.windows)), tokens: endUserWindows(tokenWindows(input.tokens)), require: input.require };
}

/** The one place that puts a Limits together. */
function limitsOf(requests: readonly RateWindow[], tokens: readonly RateWindow[], concurrency: StreamCap | undefined, endUser?: Omit<EndUserLimits, 'windows'>): Limits {
  const windows = [...requests, ...tokens];
  if (endUser === undefined) return { requests, tokens, windows, concurrency };
  return { requests, tokens, windows, concurrency, endUser: { ...endUser, windows: [...windows, ...endUser.requests, ...endUser.tokens] } };
}

function duplicateName(windows: ReadonlyArray<{ name: string }>): string | undefined {
  const names = windows.map((w) => w.name);
  return names.find((n, i) => names.indexOf(n) !== i);
}

/** How long a stream slot lasts without its holder's refresh (docs/rate-limits.md "Concurrency caps"). */
export const DEFAULT_STREAM_LEASE_MS = 30_000;

// A lease under 1 s would have its holder refresh (every lease/3) faster than a busy event
// loop can promise, and lose slots it still holds.
const concurrencySchema = z.strictObject({
  streams: z.number().int().min(1).max(1_000_000),
  lease: duration.refine((ms) => ms >= 1_000, { message: 'must be at least 1s' }).optional(),
});

/**
 * A concurrency cap as the limiter takes it: at most `streams` open /chat/stream responses
 * per subject; a slot its holder stops refreshing is freed `leaseMs` after its last refresh.
 */
export interface StreamCap {
  streams: number;
  leaseMs: number;
}

function streamCap(input: z.output<typeof concurrencySchema> | undefined): StreamCap | undefined {
  return input === undefined ? undefined : { streams: input.streams, leaseMs: input.lease ?? DEFAULT_STREAM_LEASE_MS };
}

export const planSchema = z
  .strictObject({
    windows: z.array(windowSchema).default([]),
    tokens: z.array(tokenWindowSchema).max(16).default([]),
    concurrency: concurrencySchema.optional(),
    end_user: endUserSchema.optional(),
  })
  // `concurrency` is optional in the type (plans built in code need not name it) but always
  // set here, undefined without a cap, so every parsed plan object has one shape.
  .transform((plan, ctx): Limits => {
    const limits = limitsOf(requestWindows(plan.windows), tokenWindows(plan.tokens), streamCap(plan.concurrency), plan.end_user && endUserParts(plan.end_user));
    const duplicate = duplicateName(limits.endUser?.windows ?? limits.windows);
    if (duplicate) ctx.addIssue({ code: 'custom', message: `two windows are named "${duplicate}"; give one a distinct "name"` });
    return limits;
  });

/**
 * A key's own `limits` (set with the admin API or `keys create --limits`): the shape of a
 * plan. Stored as written; each part given replaces the plan's (planWithKeyLimits).
 */
export const keyLimitsSchema = z
  .strictObject({
    windows: z.array(windowSchema).max(16).optional(),
    tokens: z.array(tokenWindowSchema).max(16).optional(),
    concurrency: concurrencySchema.optional(),
    end_user: endUserSchema.optional(),
  })
  .superRefine((limits, ctx) => {
    const endUser = limits.end_user && endUserParts(limits.end_user);
    const duplicate = duplicateName([...requestWindows(limits.windows ?? []), ...tokenWindows(limits.tokens ?? []), ...(endUser?.requests ?? []), ...(endUser?.tokens ?? [])]);
    if (duplicate) ctx.addIssue({ code: 'custom', message: `two windows are named "${duplicate}"; give one a distinct "name"` });
  });

export const DEFAULT_PLANS = {
  starter: { windows: [{ requests: 60, per: '1m' }, { requests: 10000, per: '1d' }] },
  pro: { windows: [{ requests: 300, per: '1m' }, { requests: 100000, per: '1d' }] },
  scale: { windows: [] },
};

/** A plan is its limits. */
export type PlanConfig = Limits;
export type KeyLimits = z.input<typeof keyLimitsSchema>;

/**
 * A key's own limits over its plan: `windows`, `tokens`, `concurrency` and `end_user`, each
 * where given, replace the plan's (an empty list removes windows or budgets); what is not given
 * is the plan's.
 */
export function planWithKeyLimits(plan: PlanConfig, stored: KeyLimits): PlanConfig {
  // Stored as written (durations as text): validated when set, read into milliseconds here.
  const limits = keyLimitsSchema.parse(stored);
  return limitsOf(
    limits.windows === undefined ? plan.requests : requestWindows(limits.windows),
    limits.tokens === undefined ? plan.tokens : tokenWindows(limits.tokens),
    limits.concurrency === undefined ? plan.concurrency : streamCap(limits.concurrency),
    limits.end_user === undefined ? plan.endUser : endUserParts(limits.end_user),
  );
}
