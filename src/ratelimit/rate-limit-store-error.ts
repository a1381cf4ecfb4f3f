// Typed store failures, so the failover limiter can tell "Redis is unwell" from a bug.

/** The shared store (Redis) failed to answer a rate-limit call. */
export class RateLimitStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RateLimitStoreError';
  }
}

/** The store did not answer within the configured command timeout. */
export class RateLimitStoreTimeoutError extends RateLimitStoreError {
  constructor(readonly timeoutMs: number) {
    super(`rate-limit store did not answer within ${timeoutMs} ms`);
    this.name = 'RateLimitStoreTimeoutError';
  }
}
