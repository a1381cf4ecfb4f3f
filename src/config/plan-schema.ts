// Plans and a key's own limits (docs/rate-limits.md, docs/policy.md): the scopes (the subject, an end
// user, an agent run, the account) and the stream concurrency cap, assembled from the windows of
// window-schema.ts into the shape src/policy/ compiles.
import { z } from 'zod';
import type { LimitScope, RateWindow } from './limit-window.js';
import { duration } from './schema-primitives.js';
import {
  costWindows,
  costWindowSchema,
  requestWindows,
  tokenWindows,
  tokenWindowSchema,
  toolCallsSchema,
  toolQuotas,
  windowSchema,
  type CostWindowInput,
  type TokenWindowInput,
  type ToolCallsInput,
  type ToolQuota,
} from './window-schema.js';

export { MAX_BUDGET_WINDOW_MS, MAX_QUOTA_TOOLS, MICRO_USD_PER_USD, TOOL_NAME, type ToolQuota } from './window-schema.js';

export type { RateWindow };

export const PLAN_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/**
 * The limits of one nested scope (docs/design.md, "Agent-aware policy", "Agent runs and nested
 * scopes"): windows and budgets for EACH end user (`user-` names), EACH agent run
 * (`session-`), or the whole account (`account-`), each window marked with its scope.
 */
export interface ScopeLimits {
  /** Request windows, token budgets, then cost budgets of the scope. */
  windows: readonly RateWindow[];
  /** The scope's tool-call quotas (`"*"`: every tool); undefined: none. */
  toolCalls?: readonly ToolQuota[] | undefined;
  /** true: a request that does not name the scope's id (`context.user_id`, `context.session_id`) is 400. */
  require: boolean;
}

/** The end-user scope's limits (kept under its earlier name). */
export type EndUserLimits = ScopeLimits;

/**
 * A plan's (or a key's) resolved limits, built once here: the limiter and the rest of the
 * gateway read each dimension by its field, never by its place in a list. The scopes beside
 * the subject come as fields of their own (`endUser`, `session`, `account`); src/policy/
 * compiles them into the admission policy.
 */
export interface Limits {
  /** Request windows. */
  requests: readonly RateWindow[];
  /** Token budgets: admission while a budget has tokens left, charged after the answer (docs/rate-limits.md "Token budgets"). */
  tokens: readonly RateWindow[];
  /** Cost budgets in micro-dollars: like token budgets, charged the answer's `cost_usd` (docs/rate-limits.md "Cost budgets"). */
  cost?: readonly RateWindow[] | undefined;
  /** `requests`, `tokens` then `cost`: the subject's windows, in this order. */
  windows: readonly RateWindow[];
  /** The subject's tool-call quotas (undefined: none). */
  toolCalls?: readonly ToolQuota[] | undefined;
  /** The stream concurrency cap (undefined: none). */
  concurrency?: StreamCap | undefined;
  /** Per end user of the subject (undefined: no end-user policy). */
  endUser?: ScopeLimits | undefined;
  /** Per agent run (`context.session_id`) of the subject (undefined: none). */
  session?: ScopeLimits | undefined;
  /** The whole account, across its keys (undefined: none). */
  account?: ScopeLimits | undefined;
}

const endUserSchema = z.strictObject({
  windows: z.array(windowSchema).max(16).default([]),
  tokens: z.array(tokenWindowSchema).max(16).default([]),
  require: z.boolean().default(false),
});

const sessionSchema = z.strictObject({
  windows: z.array(windowSchema).max(16).default([]),
  tokens: z.array(tokenWindowSchema).max(16).default([]),
  cost: z.array(costWindowSchema).max(16).default([]),
  tool_calls: toolCallsSchema.optional(),
  require: z.boolean().default(false),
});

const accountSchema = z.strictObject({
  windows: z.array(windowSchema).max(16).default([]),
  tokens: z.array(tokenWindowSchema).max(16).default([]),
  cost: z.array(costWindowSchema).max(16).default([]),
  tool_calls: toolCallsSchema.optional(),
});

interface ScopeInput {
  windows: z.output<typeof windowSchema>[];
  tokens: TokenWindowInput[];
  cost?: CostWindowInput[];
  tool_calls?: ToolCallsInput | undefined;
  require?: boolean;
}

/** A nested scope's part as the limiter takes it, its windows named with the scope's prefix. */
function scopeParts(input: ScopeInput, scope: LimitScope): ScopeLimits {
  const limits: ScopeLimits = {
    windows: [...requestWindows(input.windows, scope), ...tokenWindows(input.tokens, scope), ...costWindows(input.cost ?? [], scope)],
    require: input.require ?? false,
  };
  const tools = toolQuotas(input.tool_calls, scope);
  if (tools !== undefined) limits.toolCalls = tools;
  return limits;
}

/** A Limits' parts, each by its name. */
interface LimitParts {
  requests: readonly RateWindow[];
  tokens: readonly RateWindow[];
  cost: readonly RateWindow[];
  toolCalls: readonly ToolQuota[] | undefined;
  concurrency: StreamCap | undefined;
  endUser: ScopeLimits | undefined;
  session: ScopeLimits | undefined;
  account: ScopeLimits | undefined;
}

/** The one place that puts a Limits together. */
function limitsOf(parts: LimitParts): Limits {
  const { requests, tokens, cost, toolCalls, concurrency, endUser, session, account } = parts;
  const windows = [...requests, ...tokens, ...cost];
  const limits: Limits = { requests, tokens, cost, windows, concurrency };
  if (toolCalls !== undefined) limits.toolCalls = toolCalls;
  if (endUser !== undefined) limits.endUser = endUser;
  if (session !== undefined) limits.session = session;
  if (account !== undefined) limits.account = account;
  return limits;
}

/** Every window of a scope's limits (tool windows included). */
function scopeWindows(limits: ScopeLimits | undefined): RateWindow[] {
  if (limits === undefined) return [];
  return [...limits.windows, ...(limits.toolCalls ?? []).flatMap((quota) => quota.windows)];
}

/** Every window name of a Limits (tool windows and every scope's included), for the duplicate check. */
function allWindows(limits: Limits): RateWindow[] {
  return [...scopeWindows({ windows: limits.windows, toolCalls: limits.toolCalls, require: false }), ...scopeWindows(limits.endUser), ...scopeWindows(limits.session), ...scopeWindows(limits.account)];
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
    cost: z.array(costWindowSchema).max(16).default([]),
    tool_calls: toolCallsSchema.optional(),
    concurrency: concurrencySchema.optional(),
    end_user: endUserSchema.optional(),
    session: sessionSchema.optional(),
    account: accountSchema.optional(),
  })
  // `concurrency` is optional in the type (plans built in code need not name it) but always
  // set here, undefined without a cap, so every parsed plan object has one shape.
  .transform((plan, ctx): Limits => {
    const limits = limitsOf({
      requests: requestWindows(plan.windows),
      tokens: tokenWindows(plan.tokens),
      cost: costWindows(plan.cost),
      toolCalls: toolQuotas(plan.tool_calls),
      concurrency: streamCap(plan.concurrency),
      endUser: plan.end_user && scopeParts(plan.end_user, 'user'),
      session: plan.session && scopeParts(plan.session, 'session'),
      account: plan.account && scopeParts(plan.account, 'account'),
    });
    const duplicate = duplicateName(allWindows(limits));
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
    cost: z.array(costWindowSchema).max(16).optional(),
    tool_calls: toolCallsSchema.optional(),
    concurrency: concurrencySchema.optional(),
    end_user: endUserSchema.optional(),
    session: sessionSchema.optional(),
    account: accountSchema.optional(),
  })
  .superRefine((limits, ctx) => {
    const duplicate = duplicateName([
      ...requestWindows(limits.windows ?? []),
      ...tokenWindows(limits.tokens ?? []),
      ...costWindows(limits.cost ?? []),
      ...(toolQuotas(limits.tool_calls) ?? []).flatMap((quota) => quota.windows),
      ...scopeWindows(limits.end_user && scopeParts(limits.end_user, 'user')),
      ...scopeWindows(limits.session && scopeParts(limits.session, 'session')),
      ...scopeWindows(limits.account && scopeParts(limits.account, 'account')),
    ]);
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
 * A key's own limits over its plan: `windows`, `tokens`, `cost`, `tool_calls`, `concurrency`,
 * `end_user`, `session` and `account`, each where given, replace the plan's (an empty list or mapping removes them); what
 * is not given is the plan's.
 */
export function planWithKeyLimits(plan: PlanConfig, stored: KeyLimits): PlanConfig {
  // Stored as written (durations as text): validated when set, read into milliseconds here.
  const limits = keyLimitsSchema.parse(stored);
  return limitsOf({
    requests: limits.windows === undefined ? plan.requests : requestWindows(limits.windows),
    tokens: limits.tokens === undefined ? plan.tokens : tokenWindows(limits.tokens),
    cost: limits.cost === undefined ? (plan.cost ?? []) : costWindows(limits.cost),
    toolCalls: limits.tool_calls === undefined ? plan.toolCalls : toolQuotas(limits.tool_calls),
    concurrency: limits.concurrency === undefined ? plan.concurrency : streamCap(limits.concurrency),
    endUser: limits.end_user === undefined ? plan.endUser : scopeParts(limits.end_user, 'user'),
    session: limits.session === undefined ? plan.session : scopeParts(limits.session, 'session'),
    account: limits.account === undefined ? plan.account : scopeParts(limits.account, 'account'),
  });
}
