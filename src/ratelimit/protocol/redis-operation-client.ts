// The limiter's operations on one ioredis client: each registered under its versioned name
// (EVALSHA, the source re-sent on NOSCRIPT; decision 0033) and called within the configured
// command timeout. Takes the encoded [numKeys, ...KEYS, ...ARGV]; the caller decodes.
import type { Cluster, Redis } from 'ioredis';
import { withDeadline } from '../../deadline.js';
import { metrics } from '../../metrics/metrics.js';
import { RateLimitStoreError, RateLimitStoreTimeoutError } from '../rate-limit-store-error.js';
import { OPERATION, OPERATION_SOURCES, type OperationKind } from './operations.js';

type ScriptCall = (...args: Array<string | number>) => Promise<unknown>;

export class OperationClient {
  private readonly calls: Record<OperationKind, ScriptCall>;

  constructor(
    client: Redis | Cluster,
    private readonly commandTimeoutMs: number,
  ) {
    const calls = {} as Record<OperationKind, ScriptCall>;
    for (const kind of Object.keys(OPERATION) as OperationKind[]) {
      const name = OPERATION[kind];
      client.defineCommand(name, { lua: OPERATION_SOURCES[kind] });
      calls[kind] = ((client as unknown as Record<string, ScriptCall>)[name] as ScriptCall).bind(client);
    }
    this.calls = calls;
  }

  /** The raw reply, or a RateLimitStoreError (a RateLimitStoreTimeoutError past the timeout). */
  call(kind: OperationKind, args: Array<string | number>): Promise<unknown> {
    const timeoutMs = this.commandTimeoutMs;
    const startedMs = performance.now();
    // Our own bound, so it holds whatever the client's options are (offline queue, retries,
    // a hung server that keeps the socket open); see src/deadline.ts for why it is deferred.
    return withDeadline(this.calls[kind](...args), timeoutMs, () => new RateLimitStoreTimeoutError(timeoutMs)).then(
      (reply) => {
        metrics.redisCommandDuration.observe({ op: 'ratelimit' }, (performance.now() - startedMs) / 1000);
        return reply;
      },
      (error: unknown) => {
        if (error instanceof RateLimitStoreTimeoutError) throw error;
        throw new RateLimitStoreError(`rate-limit operation ${OPERATION[kind]} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      },
    );
  }
}
