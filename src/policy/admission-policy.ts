// The admission policy of a (plan, key limits) pair (docs/policy.md "The policy room";
// decision 0077), compiled once — when the config loads a plan, or when a key record with its
// own limits is first seen — and cached with the plan or the key's limits object, never built
// per request. A request reads fields of it; what it holds decides what the limit stage does:
//
// - `scopes`: the limits of each scope (subject, account, end user, session), each a list of
//   typed windows (config/limit-window.ts), with the tool-call quotas of each scope;
// - `phase`: `before-body` when everything needed is known from the key, `after-body` when a
//   scope's id (`context.user_id`, `context.session_id`) or the request's `tools` is;
// - the window lists the limiter takes, built here once (per set of named quota tools, once
//   per set seen), and the list an answer is charged to (or none: nothing to charge);
// - `roomIsAccount`: with an account scope and `rate_limits.scope: key`, every window of the
//   key counts under its account's Redis hash tag, so all scopes stay one atomic call.
//
// A plan with only request windows compiles to a policy whose scopes and quota lists are empty:
// the request path reads the same fields and takes no branch for the rest.
import type { RateWindow, ToolQuota } from '../config/plan-schema.js';
import type { Limits, ScopeLimits, StreamCap } from '../config/schema.js';
import { EVERY_TOOL, type LimitScope } from '../config/limit-window.js';

export type PolicyPhase = 'before-body' | 'after-body';

/** What a scope of the policy holds (an empty scope: no windows, no quotas). */
export interface CompiledScope {
  readonly scope: LimitScope;
  readonly windows: readonly RateWindow[];
  readonly toolCalls: readonly ToolQuota[];
  /** The request must name the scope's id (`context.user_id`, `context.session_id`), else 400. */
  readonly require: boolean;
}

export interface AdmissionPolicy {
  readonly limits: Limits;
  readonly phase: PolicyPhase;
  /** Every scope in the order their windows stand in the limiter's list. */
  readonly scopes: Readonly<Record<LimitScope, CompiledScope>>;
  /** No window, no cap, nothing after the body: the limit stage passes the request straight on. */
  readonly free: boolean;
  /** The stream concurrency cap (undefined: none). */
  readonly cap: StreamCap | undefined;
  /** The key's windows count under its account's hash tag (an account scope, `rate_limits.scope: key`). */
  readonly roomIsAccount: boolean;
  /** Whether any scope has tool-call quotas (the request's `tools` decide which refuse). */
  readonly hasToolQuotas: boolean;
  /** An end-user scope: every request counts for one (the anonymous one without `context.user_id`). */
  readonly hasUserScope: boolean;
  /** A session scope: a request naming `context.session_id` counts for that run too. */
  readonly hasSessionScope: boolean;
  /** The list an answer is charged to (every budget, each quota once); null: nothing to charge. */
  chargeList(withSession: boolean): readonly RateWindow[] | null;
  /**
   * The window list of a request naming `named` tools (null: none), with or without a session:
   * every scope's windows, then each quota refusing or reporting. One list object per variant.
   */
  windowsFor(named: ReadonlySet<string> | null, withSession: boolean): readonly RateWindow[];
  /**
   * The window list of an MCP `tools/call` whose quota names are `call` (`{server}__{tool}`,
   * `{server}__*`): every scope's windows, then each quota counting the call in its `admit`
   * form — counted by the admission itself, nothing charged after — and the others reporting,
   * so every list of a policy names the same windows in the same order (the memory limiter
   * keeps a subject's counters by that order). One list object per variant.
   */
  callWindowsFor(call: ReadonlySet<string>, withSession: boolean): readonly RateWindow[];
}

const EMPTY: readonly never[] = Object.freeze([]);

function scopeOf(scope: LimitScope, limits: ScopeLimits | undefined): CompiledScope {
  return { scope, windows: limits?.windows ?? EMPTY, toolCalls: limits?.toolCalls ?? EMPTY, require: limits?.require ?? false };
}

/** Beyond this many distinct named-tool sets per policy, lists are built per request (still correct). */
const MAX_CACHED_LISTS = 256;

/** The windows of one variant (with or without the session's), and its lists per set of named tools. */
class Variant {
  // The limiter coalesces a turn's requests by list identity and the memory limiter keeps
  // counters by list order: one list object per set of named tools.
  private readonly lists = new Map<string, readonly RateWindow[]>();
  private readonly callLists = new Map<string, readonly RateWindow[]>();
  readonly charged: readonly RateWindow[] | null;

  constructor(
    private readonly base: readonly RateWindow[],
    private readonly quotas: readonly ToolQuota[],
  ) {
    const budgets = quotas.length > 0 || base.some((window) => window.kind !== 'requests');
    this.charged = budgets ? this.windowsFor(new Set(quotas.map((quota) => quota.tool))) : null;
  }

  windowsFor(named: ReadonlySet<string> | null): readonly RateWindow[] {
    return this.listFor(named, this.lists, 'windows');
  }

  callWindowsFor(call: ReadonlySet<string>): readonly RateWindow[] {
    return this.listFor(call, this.callLists, 'admits');
  }

  /** The base windows, then each quota in its `refusing` form when `named` names it, else reporting; one list per set. */
  private listFor(named: ReadonlySet<string> | null, lists: Map<string, readonly RateWindow[]>, refusing: 'windows' | 'admits'): readonly RateWindow[] {
    const quotas = this.quotas;
    if (quotas.length === 0) return this.base;
    let key = '';
    for (const quota of quotas) key += refuses(quota, named) ? '1' : '0';
    const known = lists.get(key);
    if (known !== undefined) return known;
    const list = [...this.base];
    for (const quota of quotas) list.push(...(refuses(quota, named) ? quota[refusing] : quota.reports));
    if (lists.size < MAX_CACHED_LISTS) lists.set(key, list);
    return list;
  }
}

class CompiledPolicy implements AdmissionPolicy {
  readonly phase: PolicyPhase;
  readonly scopes: Readonly<Record<LimitScope, CompiledScope>>;
  readonly free: boolean;
  readonly cap: StreamCap | undefined;
  readonly roomIsAccount: boolean;
  readonly hasToolQuotas: boolean;
  readonly hasUserScope: boolean;
  readonly hasSessionScope: boolean;
  private readonly withoutSession: Variant;
  private readonly withSession: Variant;

  constructor(
    readonly limits: Limits,
    subjectScopeIsKey: boolean,
  ) {
    const scopes = {
      subject: { scope: 'subject', windows: limits.windows, toolCalls: limits.toolCalls ?? EMPTY, require: false },
      account: scopeOf('account', limits.account),
      user: scopeOf('user', limits.endUser),
      session: scopeOf('session', limits.session),
    } satisfies Record<LimitScope, CompiledScope>;
    this.scopes = scopes;
    const base = [...scopes.subject.windows, ...scopes.account.windows, ...scopes.user.windows];
    const quotas = [...scopes.subject.toolCalls, ...scopes.account.toolCalls];
    this.withoutSession = new Variant(base, quotas);
    this.withSession = limits.session === undefined ? this.withoutSession : new Variant([...base, ...scopes.session.windows], [...quotas, ...scopes.session.toolCalls]);
    this.hasToolQuotas = quotas.length > 0 || scopes.session.toolCalls.length > 0;
    this.hasUserScope = limits.endUser !== undefined;
    this.hasSessionScope = limits.session !== undefined;
    this.cap = limits.concurrency;
    this.roomIsAccount = subjectScopeIsKey && (scopes.account.windows.length > 0 || scopes.account.toolCalls.length > 0);
    const needsBody = this.hasUserScope || this.hasSessionScope || this.hasToolQuotas;
    this.phase = needsBody ? 'after-body' : 'before-body';
    this.free = base.length === 0 && this.cap === undefined && !needsBody;
  }

  chargeList(withSession: boolean): readonly RateWindow[] | null {
    return (withSession ? this.withSession : this.withoutSession).charged;
  }

  windowsFor(named: ReadonlySet<string> | null, withSession: boolean): readonly RateWindow[] {
    return (withSession ? this.withSession : this.withoutSession).windowsFor(named);
  }

  callWindowsFor(call: ReadonlySet<string>, withSession: boolean): readonly RateWindow[] {
    return (withSession ? this.withSession : this.withoutSession).callWindowsFor(call);
  }
}

/** "*" counts every tool call: it refuses a request that names any tool. */
function refuses(quota: ToolQuota, named: ReadonlySet<string> | null): boolean {
  return named !== null && (named.has(quota.tool) || (quota.tool === EVERY_TOOL && named.size > 0));
}

/** Compiles a (plan, key limits) pair's resolved limits; callers cache it (policy-cache.ts). */
export function compilePolicy(limits: Limits, subjectScopeIsKey: boolean): AdmissionPolicy {
  return new CompiledPolicy(limits, subjectScopeIsKey);
}
