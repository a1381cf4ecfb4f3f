// Plans and a key's own limits (docs/rate-limits.md): request windows, token and cost budgets,
// tool-call quotas and the stream concurrency cap, read into the shape the limiter takes.
import { z } from 'zod';
import { formatDurationMs } from './duration.js';
import { duration, positiveDuration } from './schema-primitives.js';

export const PLAN_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const windowSchema = z.strictObject({
  requests: z.number().int().min(1),
  per: positiveDuration,
  name: z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"').optional(),
});

const WINDOW_NAMES: Record<number, string> = { 1_000: 'second', 60_000: 'minute', 3_600_000: 'hour', 86_400_000: 'day' };

/** The longest budget window (tokens, cost, tool calls): 90 days, in buckets of 36 h (docs/rate-limits.md "Accuracy bound"). */
export const MAX_BUDGET_WINDOW_MS = 90 * 86_400_000;
const budgetDuration = positiveDuration.refine((ms) => ms <= MAX_BUDGET_WINDOW_MS, { message: 'must be at most 90d' });
const windowName = z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"');

const tokenWindowSchema = z.strictObject({
  tokens: z.number().int().min(1),
  per: budgetDuration,
  name: windowName.optional(),
});

/** Cost budgets are counted in micro-dollars (integers in Redis): 1 USD = 1,000,000. */
export const MICRO_USD_PER_USD = 1_000_000;

const costWindowSchema = z.strictObject({
  // At least one micro-dollar; at most a billion dollars, so every count stays an exact integer in Lua's doubles.
  usd: z
    .number()
    .finite()
    .gt(0)
    .max(1_000_000_000)
    .refine((usd) => Math.round(usd * MICRO_USD_PER_USD) >= 1, { message: 'must be at least 0.000001' }),
  per: budgetDuration,
  name: windowName.optional(),
});

const toolWindowSchema = z.strictObject({
  calls: z.number().int().min(1).max(1_000_000_000),
  per: budgetDuration,
  name: windowName.optional(),
});

/** A tool named in `tool_calls`: what an agent's allow-list may hold, bounded so it fits a window (and Redis key) name. */
// `{server}__*` names every tool of an MCP server (docs/mcp.md "Quotas"); `{server}__{tool}` one.
export const TOOL_NAME = /^(?:[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}|[a-z0-9][a-z0-9_-]{0,61}__\*)$/;
export const MAX_QUOTA_TOOLS = 64;

const toolCallsSchema = z
  .record(z.string(), z.array(toolWindowSchema).min(1).max(16))
  .superRefine((tools, ctx) => {
    const names = Object.keys(tools);
    // Checked before the names so 10,000 tools answer one problem, not 10,000.
    if (names.length > MAX_QUOTA_TOOLS) {
      ctx.addIssue({ code: 'custom', message: `at most ${MAX_QUOTA_TOOLS} tools may have quotas, got ${names.length}` });
      return;
    }
    for (const name of names) {
      if (!TOOL_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'a tool name: letters, digits, "_", ".", ":" or "-", at most 64 characters (or "{server}__*" for all of an MCP server\'s tools)' });
    }
  });

type WindowInput = z.output<typeof windowSchema>;
type TokenWindowInput = z.output<typeof tokenWindowSchema>;
type CostWindowInput = z.output<typeof costWindowSchema>;
type ToolCallsInput = z.output<typeof toolCallsSchema>;

/**
 * One window as the limiter takes it; `tokens: true` on a token budget (its figures count tokens),
 * `cost: true` on a cost budget (micro-dollars), `tool` on a tool-call quota (calls of that tool).
 * The three are budgets: read at admission, charged after the answer (window-math.ts chargeUnits).
 */
export interface RateWindow {
  name: string;
  limit: number;
  windowMs: number;
  tokens?: true;
  cost?: true;
  tool?: string;
  /**
   * Read and reported, never refusing: a tool quota of a tool the request does not name (its
   * remaining tells which tools to withhold; docs/rate-limits.md "Tool-call quotas").
   */
  reportOnly?: true;
  /** Set on an end user's window: counted per (subject, end user), refusing with `param: "context.user_id"`. */
  endUser?: true;
}

/**
 * One tool's quota windows (docs/design.md, "Agent-aware policy"), in two forms with the same
 * names (so the same counters): `windows` refuse (the request names the tool), `reports` only report.
 */
export interface ToolQuota {
  tool: string;
  windows: readonly RateWindow[];
  reports: readonly RateWindow[];
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
  /** Cost budgets in micro-dollars: like token budgets, charged the answer's `cost_usd` (docs/rate-limits.md "Cost budgets"). */
  cost?: readonly RateWindow[] | undefined;
  /** `requests`, `tokens` then `cost`: the one list the limiter counts and reports statuses in, in this order. */
  windows: readonly RateWindow[];
  /**
   * Tool-call quotas (undefined: none): checked after the body, where the request's `tools`
   * are known (src/http/agent-policy-limit.ts), never in `windows`.
   */
  toolCalls?: readonly ToolQuota[] | undefined;
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

/** A policy window's period in its name: `minute`, `day`, else the duration as written short (`30d`, `90m`). */
function periodName(ms: number): string {
  return WINDOW_NAMES[ms] ?? formatDurationMs(ms);
}

/** Cost budgets are named `cost-<period>` unless named; their limit is in micro-dollars. */
function costWindows(inputs: readonly CostWindowInput[]): RateWindow[] {
  return inputs.map((c) => ({ name: c.name ?? `cost-${periodName(c.per)}`, limit: Math.round(c.usd * MICRO_USD_PER_USD), windowMs: c.per, cost: true }));
}

/** Tool windows are named `tool-<tool>-<period>` unless named; in the order the config lists the tools. */
function toolQuotas(input: ToolCallsInput | undefined): ToolQuota[] | undefined {
  if (input === undefined) return undefined;
  const quotas: ToolQuota[] = [];
  for (const [tool, inputs] of Object.entries(input)) {
    const windows: RateWindow[] = inputs.map((t) => ({ name: t.name ?? `tool-${tool}-${periodName(t.per)}`, limit: t.calls, windowMs: t.per, tool }));
    quotas.push({ tool, windows, reports: windows.map((w) => ({ ...w, reportOnly: true })) });
  }
  return quotas.length === 0 ? undefined : quotas;
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

/** A Limits' parts, each by its name. */
interface LimitParts {
  requests: readonly RateWindow[];
  tokens: readonly RateWindow[];
  cost: readonly RateWindow[];
  toolCalls: readonly ToolQuota[] | undefined;
  concurrency: StreamCap | undefined;
  endUser: Omit<EndUserLimits, 'windows'> | undefined;
}

/** The one place that puts a Limits together. */
function limitsOf(parts: LimitParts): Limits {
  const { requests, tokens, cost, toolCalls, concurrency, endUser } = parts;
  const windows = [...requests, ...tokens, ...cost];
  const limits: Limits = { requests, tokens, cost, windows, concurrency };
  if (toolCalls !== undefined) limits.toolCalls = toolCalls;
  if (endUser !== undefined) limits.endUser = { ...endUser, windows: [...windows, ...endUser.requests, ...endUser.tokens] };
  return limits;
}

/** Every window name of a Limits (tool windows included), for the duplicate check. */
function allWindows(limits: Limits): RateWindow[] {
  const tools = (limits.toolCalls ?? []).flatMap((quota) => quota.windows);
  return [...(limits.endUser?.windows ?? limits.windows), ...tools];
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
      endUser: plan.end_user && endUserParts(plan.end_user),
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
  })
  .superRefine((limits, ctx) => {
    const endUser = limits.end_user && endUserParts(limits.end_user);
    const tools = (toolQuotas(limits.tool_calls) ?? []).flatMap((quota) => quota.windows);
    const duplicate = duplicateName([
      ...requestWindows(limits.windows ?? []),
      ...tokenWindows(limits.tokens ?? []),
      ...costWindows(limits.cost ?? []),
      ...tools,
      ...(endUser?.requests ?? []),
      ...(endUser?.tokens ?? []),
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
 * A key's own limits over its plan: `windows`, `tokens`, `cost`, `tool_calls`, `concurrency` and
 * `end_user`, each where given, replace the plan's (an empty list or mapping removes them); what
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
    endUser: limits.end_user === undefined ? plan.endUser : endUserParts(limits.end_user),
  });
}
