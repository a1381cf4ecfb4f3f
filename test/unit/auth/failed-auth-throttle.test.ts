import { describe, expect, it } from 'vitest';
import { FailedAuthThrottle } from '../../../src/auth/failed-auth-throttle.js';
import { ManualClock } from '../../../src/clock.js';
import { GatewayError } from '../../../src/errors.js';
import { silentLogger } from '../../../src/logger.js';

function caught(fn: () => void): GatewayError | undefined {
  try {
    fn();
  } catch (error) {
    return error as GatewayError;
  }
  return undefined;
}

describe('FailedAuthThrottle (memory)', () => {
  it('allows maxAttempts failures, then blocks the address with a Retry-After', async () => {
    const clock = new ManualClock();
    const throttle = new FailedAuthThrottle({ maxAttempts: 3, perMs: 60_000, blockForMs: 30_000, clock, logger: silentLogger });
    for (let i = 0; i < 2; i++) {
      await throttle.recordFailure('10.0.0.1');
      expect(caught(() => throttle.check('10.0.0.1'))).toBeUndefined();
    }
    await throttle.recordFailure('10.0.0.1');
    const error = caught(() => throttle.check('10.0.0.1'));
    expect(error).toBeInstanceOf(GatewayError);
    expect(error?.type).toBe('rate_limit_exceeded');
    expect(error?.status).toBe(429);
    expect(error?.retryAfterSeconds).toBe(30);
    await expect(throttle.checkShared('10.0.0.1')).rejects.toMatchObject({ type: 'rate_limit_exceeded' });
    // other addresses are unaffected
    expect(caught(() => throttle.check('10.0.0.2'))).toBeUndefined();
    // the local block ends with the block time (injected clock)
    clock.advance(29_000);
    expect(caught(() => throttle.check('10.0.0.1'))?.retryAfterSeconds).toBe(1);
    clock.advance(1_000);
    expect(caught(() => throttle.check('10.0.0.1'))).toBeUndefined();
  });
});

describe('FailedAuthThrottle: counting is the check', () => {
  it('of 50 failures in flight together, exactly maxAttempts are failures and the rest are 429s', async () => {
    const throttle = new FailedAuthThrottle({ maxAttempts: 3, perMs: 60_000, blockForMs: 30_000, clock: new ManualClock(), logger: silentLogger });
    const results = await Promise.all(Array.from({ length: 50 }, () => throttle.recordFailure('10.0.0.9')));
    expect(results.filter((r) => r === undefined)).toHaveLength(3);
    const refusals = results.filter((r) => r !== undefined);
    expect(refusals).toHaveLength(47);
    for (const refusal of refusals) expect(refusal).toMatchObject({ type: 'rate_limit_exceeded', status: 429 });
    expect(caught(() => throttle.check('10.0.0.9'))?.type).toBe('rate_limit_exceeded');
  });
});
