// Shared limiter: every window of a request checked and counted in one Lua script call
// (EVALSHA; ioredis re-sends the source on NOSCRIPT). All keys of a subject share the hash
// tag {subject}, so the script runs on Redis Cluster too.
//
// Requests of the same subject that arrive in the same event-loop turn are coalesced into
// one call that carries their count (flushed from setImmediate, i.e. once the turn's I/O
// callbacks have run). Redis admits them in arrival order exactly as that many one-by-one
// calls at the same instant would, so the limit stays exact across instances; the gateway
// sends one script call per subject per turn instead of one per request
// (docs/rate-limits.md "Coalescing").
import type { Cluster, Redis } from 'ioredis';
import { metrics } from '../metrics/metrics.js';
import type { RateLimitDecision, RateLimiter, RateWindow, WindowStatus } from './rate-limiter.js';
import { RateLimitStoreError, RateLimitStoreTimeoutError } from './rate-limit-store-error.js';
import { withDeadline } from '../deadline.js';
import { SLIDING_WINDOW_LUA } from './sliding-window.lua.js';
import { bucketWidthMs } from './window-math.js';

export interface RedisRateLimiterOptions {
  /** Shared client; the limiter never quits it. Create it without `keyPrefix` (prefix below is applied here). */
  client: Redis | Cluster;
  /** config.redis.prefix, e.g. "agentgw:". */
  prefix: string;
  /** config.redis.commandTimeoutMs: a call not answered by then rejects with RateLimitStoreTimeoutError. */
  commandTimeoutMs: number;
}

export interface RedisConsumeOptions {
  /** Decide at this time instead of the Redis server's TIME (tests). */
  nowMs?: number;
}

const COMMAND = 'agentgwSlidingWindow';
const NO_WINDOWS: RateLimitDecision = Object.freeze({ allowed: true, windows: [], retryAfterMs: 0 }) as RateLimitDecision;

type ScriptCall = (numKeys: number, ...args: Array<string | number>) => Promise<unknown>;

/** `${prefix}rl:{${subject}}:${windowName}` — the layout docs/rate-limits.md describes. */
export function rateLimitKey(prefix: string, subject: string, windowName: string): string {
  return `${prefix}rl:{${subject}}:${windowName}`;
}

interface Waiter {
  resolve(decision: RateLimitDecision): void;
  reject(error: unknown): void;
}

/** The requests of one subject (and one window list, one time override) in this turn. */
interface Batch {
  subject: string;
  windows: readonly RateWindow[];
  nowArg: number | '';
  waiters: Waiter[];
}

export class RedisRateLimiter implements RateLimiter {
  private readonly script: ScriptCall;
  private readonly keyHead: string;
  private readonly commandTimeoutMs: number;
  private pending = new Map<string, Batch>();
  /** Batches displaced from `pending` by a window change within the turn; sent all the same. */
  private displaced: Batch[] = [];
  private flushScheduled = false;
  private readonly flush = (): void => {
    this.flushScheduled = false;
    const batches = this.pending;
    const displaced = this.displaced;
    this.pending = new Map();
    if (displaced.length > 0) this.displaced = [];
    for (const batch of displaced) this.send(batch);
    for (const batch of batches.values()) this.send(batch);
  };

  constructor(options: RedisRateLimiterOptions) {
    const { client } = options;
    client.defineCommand(COMMAND, { lua: SLIDING_WINDOW_LUA });
    const call = (client as unknown as Record<string, ScriptCall>)[COMMAND] as ScriptCall;
    this.script = call.bind(client);
    this.keyHead = `${options.prefix}rl:{`;
    this.commandTimeoutMs = options.commandTimeoutMs;
  }

  consume(subject: string, windows: readonly RateWindow[], options?: RedisConsumeOptions): Promise<RateLimitDecision> {
    if (windows.length === 0) return Promise.resolve(NO_WINDOWS);
    // An empty tag ("{}" or "{}...") would hash the whole key and split a subject across slots.
    if (subject.length === 0 || subject.charCodeAt(0) === 125 /* } */) {
      return Promise.reject(new TypeError(`rate-limit subject ${JSON.stringify(subject)} cannot be used as a Redis hash tag`));
    }
    const nowArg = options?.nowMs === undefined ? '' : Math.floor(options.nowMs);
    const batchKey = nowArg === '' ? subject : `${subject}\n${nowArg}`;
    return new Promise<RateLimitDecision>((resolve, reject) => {
      let batch = this.pending.get(batchKey);
      // A config reload between two requests of one turn may change the windows: the
      // earlier batch keeps its own and is sent apart.
      if (batch !== undefined && batch.windows !== windows) {
        this.displaced.push(batch);
        batch = undefined;
      }
      if (batch === undefined) {
        batch = { subject, windows, nowArg, waiters: [] };
        this.pending.set(batchKey, batch);
      }
      batch.waiters.push({ resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  /** The client belongs to the caller (it is shared with other stores); nothing to release here. */
  async close(): Promise<void> {}

  private send(batch: Batch): void {
    const { windows, waiters } = batch;
    const n = windows.length;
    const args: Array<string | number> = new Array(2 * n + 2 + 3 * n);
    const keyHead = this.keyHead + batch.subject + '}:';
    for (let i = 0; i < n; i += 1) {
      const window = windows[i] as RateWindow;
      args[i] = keyHead + window.name;
      const base = n + 2 + 3 * i;
      args[base] = window.limit;
      args[base + 1] = window.windowMs;
      args[base + 2] = bucketWidthMs(window.windowMs);
    }
    args[n] = batch.nowArg;
    args[n + 1] = waiters.length;
    this.call(n, args).then(
      (reply) => {
        let decisions: RateLimitDecision[];
        try {
          decisions = toDecisions(reply, windows, waiters.length);
        } catch (error) {
          for (const waiter of waiters) waiter.reject(error);
          return;
        }
        for (let i = 0; i < waiters.length; i += 1) waiters[i]!.resolve(decisions[i]!);
      },
      (error: unknown) => {
        for (const waiter of waiters) waiter.reject(error);
      },
    );
  }

  private call(numKeys: number, args: Array<string | number>): Promise<unknown> {
    const timeoutMs = this.commandTimeoutMs;
    const startedMs = performance.now();
    // Our own bound, so it holds whatever the client's options are (offline queue, retries,
    // a hung server that keeps the socket open); see src/deadline.ts for why it is deferred.
    return withDeadline(this.script(numKeys, ...args), timeoutMs, () => new RateLimitStoreTimeoutError(timeoutMs)).then(
      (reply) => {
        metrics.redisCommandDuration.observe({ op: 'ratelimit' }, (performance.now() - startedMs) / 1000);
        return reply;
      },
      (error: unknown) => {
        if (error instanceof RateLimitStoreTimeoutError) throw error;
        throw new RateLimitStoreError(`rate-limit script failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      },
    );
  }
}

/**
 * One decision per coalesced request, in arrival order: request i < admitted was counted
 * when `admitted - 1 - i` of its batch were still to come, so it sees that many more
 * remaining than the final state; the rest see the final state and are refused.
 */
export function toDecisions(reply: unknown, windows: readonly RateWindow[], count: number): RateLimitDecision[] {
  if (!Array.isArray(reply) || reply.length !== 3 + 3 * windows.length) {
    throw new RateLimitStoreError(`rate-limit script returned an unexpected reply: ${JSON.stringify(reply)}`);
  }
  const admitted = Number(reply[0]);
  const retryAfterMs = Number(reply[1]);
  const decisions: RateLimitDecision[] = new Array(count);
  let refused: RateLimitDecision | undefined;
  for (let i = 0; i < count; i += 1) {
    if (i >= admitted) {
      refused ??= { allowed: false, windows: windowStatuses(reply, windows, 0), retryAfterMs };
      decisions[i] = refused;
    } else {
      decisions[i] = { allowed: true, windows: windowStatuses(reply, windows, admitted - 1 - i), retryAfterMs: 0 };
    }
  }
  return decisions;
}

function windowStatuses(reply: unknown[], windows: readonly RateWindow[], extraRemaining: number): WindowStatus[] {
  const statuses: WindowStatus[] = new Array(windows.length);
  for (let i = 0; i < windows.length; i += 1) {
    const window = windows[i] as RateWindow;
    const remaining = Number(reply[3 + 3 * i]) + extraRemaining;
    const resetMs = remaining > 0 ? 0 : Number(reply[4 + 3 * i]);
    statuses[i] = {
      name: window.name,
      limit: window.limit,
      windowMs: window.windowMs,
      remaining,
      resetMs,
      recoverMs: remaining > 0 ? Number(reply[5 + 3 * i]) : resetMs,
    };
  }
  return statuses;
}
