// The limiter's operations on one ioredis client: each registered under its versioned name
// (EVALSHA, the source re-sent on NOSCRIPT; decision 0033) and called within the configured
// command timeout. call(op, request) takes an operation (limiter-operations.ts) and that
// operation's request only, encodes it, and answers the decoded reply.
import type { Cluster, Redis } from 'ioredis';
import { withDeadline } from '../../deadline.js';
import { metrics } from '../../metrics/metrics.js';
import { defineOperation, operationCall, type EncodedCall, type ReplyOf, type RequestOf } from '../../redis/redis-operation.js';
import { RateLimitStoreError, RateLimitStoreTimeoutError } from '../rate-limit-store-error.js';
import { LIMITER_OPERATIONS, type LimiterOperation } from './limiter-operations.js';

type ScriptCall = (...args: EncodedCall) => Promise<unknown>;

export class OperationClient {
  /** Each operation's bound script call, by its versioned name. */
  private readonly calls = new Map<string, ScriptCall>();

  constructor(
    client: Redis | Cluster,
    private readonly commandTimeoutMs: number,
  ) {
    for (const operation of LIMITER_OPERATIONS) {
      defineOperation(client, operation);
      this.calls.set(operation.name, operationCall(client, operation));
    }
  }

  /**
   * The decoded reply, or a RateLimitStoreError: a RateLimitStoreTimeoutError past the timeout,
   * a RateLimitProtocolError for a reply not of this operation's version. Encoding errors (a
   * request no operation can carry) throw here, before anything is sent.
   */
  call<Op extends LimiterOperation>(operation: Op, request: RequestOf<Op>): Promise<ReplyOf<Op>> {
    const args = operation.encode(request as never);
    const timeoutMs = this.commandTimeoutMs;
    const startedMs = performance.now();
    // Our own bound, so it holds whatever the client's options are (offline queue, retries,
    // a hung server that keeps the socket open); see src/deadline.ts for why it is deferred.
    return withDeadline((this.calls.get(operation.name) as ScriptCall)(...args), timeoutMs, () => new RateLimitStoreTimeoutError(timeoutMs)).then(
      (reply) => {
        metrics.redisCommandDuration.observe({ op: 'ratelimit' }, (performance.now() - startedMs) / 1000);
        return operation.decode(reply, request as never) as ReplyOf<Op>;
      },
      (error: unknown) => {
        if (error instanceof RateLimitStoreTimeoutError) throw error;
        throw new RateLimitStoreError(`rate-limit operation ${operation.name} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      },
    );
  }
}
