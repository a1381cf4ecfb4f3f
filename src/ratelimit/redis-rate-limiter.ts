// Shared limiter: every window of a request checked and counted in one Lua script call
// (EVALSHA; ioredis re-sends the source on NOSCRIPT). All keys of a subject share the hash
// tag {subject}, so the script runs on Redis Cluster too.
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

export class RedisRateLimiter implements RateLimiter {
  private readonly script: ScriptCall;
  private readonly keyHead: string;
  private readonly commandTimeoutMs: number;

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
    const n = windows.length;
    const args: Array<string | number> = new Array(2 * n + 1 + 3 * n);
    const keyHead = this.keyHead + subject + '}:';
    for (let i = 0; i < n; i += 1) {
      const window = windows[i] as RateWindow;
      args[i] = keyHead + window.name;
      const base = n + 1 + 3 * i;
      args[base] = window.limit;
      args[base + 1] = window.windowMs;
      args[base + 2] = bucketWidthMs(window.windowMs);
    }
    args[n] = options?.nowMs === undefined ? '' : Math.floor(options.nowMs);
    return this.call(n, args).then((reply) => toDecision(reply, windows));
  }

  /** The client belongs to the caller (it is shared with other stores); nothing to release here. */
  async close(): Promise<void> {}

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

function toDecision(reply: unknown, windows: readonly RateWindow[]): RateLimitDecision {
  if (!Array.isArray(reply) || reply.length !== 3 + 3 * windows.length) {
    throw new RateLimitStoreError(`rate-limit script returned an unexpected reply: ${JSON.stringify(reply)}`);
  }
  const statuses: WindowStatus[] = new Array(windows.length);
  for (let i = 0; i < windows.length; i += 1) {
    const window = windows[i] as RateWindow;
    statuses[i] = {
      name: window.name,
      limit: window.limit,
      windowMs: window.windowMs,
      remaining: Number(reply[3 + 3 * i]),
      resetMs: Number(reply[4 + 3 * i]),
      recoverMs: Number(reply[5 + 3 * i]),
    };
  }
  return { allowed: reply[0] === 1, windows: statuses, retryAfterMs: Number(reply[1]) };
}
