// budget.threshold for the nested scopes (decision 0079): a session's windows fire per run and
// name it, the account's fire like the subject's own, an end user's never do (decision 0069).
import { describe, expect, it } from 'vitest';
import { BudgetThresholds } from '../../../src/ratelimit/budget-thresholds.js';
import type { WindowStatus } from '../../../src/ratelimit/rate-limiter.js';
import { RecordingNotifier } from '../../helpers/recording-notifier.js';

function status(name: string, used: number, extra: Partial<WindowStatus> = {}): WindowStatus {
  return { name, limit: 10, windowMs: 60_000, remaining: 10 - used, resetMs: 0, recoverMs: 0, ...extra };
}

describe('budget.threshold for session and account scopes', () => {
  it('fires for a run (naming its session_id) and for the account, once per crossing each; never for an end user', () => {
    const notifier = new RecordingNotifier(() => 1_000);
    const thresholds = new BudgetThresholds([0.5], notifier, { now: () => 1_000 });
    const decision = (used: number): WindowStatus[] => [
      status('minute', 1),
      status('account-minute', used, { scope: 'account' }),
      status('user-minute', used, { scope: 'user' }),
      status('session-minute', used, { scope: 'session' }),
    ];
    thresholds.observe('account:acme', decision(5), 'run-1');
    // Another run of the same subject crosses on its own; the account's crossing is not repeated.
    thresholds.observe('account:acme', decision(6), 'run-2');
    const events = notifier.ofType('budget.threshold').map((e) => [e.data.policy, e.data.session_id ?? null, e.data.used]);
    expect(events).toEqual([
      ['account-minute', null, 5],
      ['session-minute', 'run-1', 5],
      ['session-minute', 'run-2', 6],
    ]);
    // Without a counted session, session windows are not read for thresholds.
    thresholds.observe('account:other', [status('session-minute', 9, { scope: 'session' })], null);
    expect(notifier.ofType('budget.threshold')).toHaveLength(3);
  });

  it("a key's account windows are tracked and published as its account's, shared by the account's keys", () => {
    const notifier = new RecordingNotifier(() => 1_000);
    const thresholds = new BudgetThresholds([0.5], notifier, { now: () => 1_000 });
    thresholds.observe('key:k1', [status('minute', 5), status('account-minute', 5, { scope: 'account' })], null, 'account:acme');
    // The second key: its own minute crosses for it; the account's already crossed.
    thresholds.observe('key:k2', [status('minute', 5), status('account-minute', 6, { scope: 'account' })], null, 'account:acme');
    expect(notifier.ofType('budget.threshold').map((e) => [e.subject, e.data.policy])).toEqual([
      ['key:k1', 'minute'],
      ['account:acme', 'account-minute'],
      ['key:k2', 'minute'],
    ]);
  });
});
