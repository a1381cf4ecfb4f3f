// One limit's config shape and how it reads into a typed limit (config/limit-window.ts): the
// schemas of a request window, a token or cost budget and a tool's quota, and the builders that
// name each window (`minute`, `tokens-day`, `cost-30d`, `tool-<tool>-day`, with its scope's
// prefix). plan-schema.ts assembles a plan's (or a key's) scopes from them.
import { z } from 'zod';
import { formatDurationMs } from './duration.js';
import { EVERY_TOOL, SCOPE_NAME_PREFIX, type LimitScope, type RateWindow, type ToolWindowUse } from './limit-window.js';
import { positiveDuration } from './schema-primitives.js';

export const windowSchema = z.strictObject({
  requests: z.number().int().min(1),
  per: positiveDuration,
  name: z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"').optional(),
});

const WINDOW_NAMES: Record<number, string> = { 1_000: 'second', 60_000: 'minute', 3_600_000: 'hour', 86_400_000: 'day' };

/** The longest budget window (tokens, cost, tool calls): 90 days, in buckets of 36 h (docs/rate-limits.md "Accuracy bound"). */
export const MAX_BUDGET_WINDOW_MS = 90 * 86_400_000;
const budgetDuration = positiveDuration.refine((ms) => ms <= MAX_BUDGET_WINDOW_MS, { message: 'must be at most 90d' });
const windowName = z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"');

export const tokenWindowSchema = z.strictObject({
  tokens: z.number().int().min(1),
  per: budgetDuration,
  name: windowName.optional(),
});

/** Cost budgets are counted in micro-dollars (integers in Redis): 1 USD = 1,000,000. */
export const MICRO_USD_PER_USD = 1_000_000;

export const costWindowSchema = z.strictObject({
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

export const toolCallsSchema = z
  .record(z.string(), z.array(toolWindowSchema).min(1).max(16))
  .superRefine((tools, ctx) => {
    const names = Object.keys(tools);
    // Checked before the names so 10,000 tools answer one problem, not 10,000.
    if (names.length > MAX_QUOTA_TOOLS) {
      ctx.addIssue({ code: 'custom', message: `at most ${MAX_QUOTA_TOOLS} tools may have quotas, got ${names.length}` });
      return;
    }
    for (const name of names) {
      if (name !== EVERY_TOOL && !TOOL_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'a tool name: letters, digits, "_", ".", ":" or "-", at most 64 characters (or "{server}__*" for all of an MCP server\'s tools)' });
    }
  });

export type WindowInput = z.output<typeof windowSchema>;
export type TokenWindowInput = z.output<typeof tokenWindowSchema>;
export type CostWindowInput = z.output<typeof costWindowSchema>;
export type ToolCallsInput = z.output<typeof toolCallsSchema>;

/**
 * One tool's quota windows (docs/design.md, "Agent-aware policy"), in two forms with the same
 * names (so the same counters): `windows` refuse (the request names the tool), `reports` only report.
 */
export interface ToolQuota {
  tool: string;
  /** Refusing, charged after the answer (a chat request naming the tool). */
  windows: readonly RateWindow[];
  /** Read and reported only (a chat request not naming it). */
  reports: readonly RateWindow[];
  /** Refusing, counted by the admission (an MCP call of the tool). */
  admits: readonly RateWindow[];
}

export function requestWindows(inputs: readonly WindowInput[], scope: LimitScope = 'subject'): RateWindow[] {
  return inputs.map((w) => ({ name: SCOPE_NAME_PREFIX[scope] + (w.name ?? WINDOW_NAMES[w.per] ?? `${w.per / 1000}s`), limit: w.requests, windowMs: w.per, kind: 'requests', scope }));
}

/** Token windows are named `tokens-<period>` unless named. */
export function tokenWindows(inputs: readonly TokenWindowInput[], scope: LimitScope = 'subject'): RateWindow[] {
  return inputs.map((t) => ({ name: SCOPE_NAME_PREFIX[scope] + (t.name ?? `tokens-${WINDOW_NAMES[t.per] ?? `${t.per / 1000}s`}`), limit: t.tokens, windowMs: t.per, kind: 'tokens', scope }));
}

/** A policy window's period in its name: `minute`, `day`, else the duration as written short (`30d`, `90m`). */
function periodName(ms: number): string {
  return WINDOW_NAMES[ms] ?? formatDurationMs(ms);
}

/** Cost budgets are named `cost-<period>` unless named; their limit is in micro-dollars. */
export function costWindows(inputs: readonly CostWindowInput[], scope: LimitScope = 'subject'): RateWindow[] {
  return inputs.map((c) => ({ name: SCOPE_NAME_PREFIX[scope] + (c.name ?? `cost-${periodName(c.per)}`), limit: Math.round(c.usd * MICRO_USD_PER_USD), windowMs: c.per, kind: 'cost', scope }));
}

/** `"*"` in a window name: every tool (`tool-all-day`), so the name stays a valid key part. */
function toolNamePart(tool: string): string {
  return tool === EVERY_TOOL ? 'all' : tool;
}

/** Tool windows are named `tool-<tool>-<period>` unless named; in the order the config lists the tools. */
export function toolQuotas(input: ToolCallsInput | undefined, scope: LimitScope = 'subject'): ToolQuota[] | undefined {
  if (input === undefined) return undefined;
  const quotas: ToolQuota[] = [];
  for (const [tool, inputs] of Object.entries(input)) {
    const quota = (use: ToolWindowUse): RateWindow[] =>
      inputs.map((t) => ({ name: SCOPE_NAME_PREFIX[scope] + (t.name ?? `tool-${toolNamePart(tool)}-${periodName(t.per)}`), limit: t.calls, windowMs: t.per, kind: 'tool_calls', scope, tool, use }));
    quotas.push({ tool, windows: quota('charge'), reports: quota('report'), admits: quota('admit') });
  }
  return quotas.length === 0 ? undefined : quotas;
}
