// The limiter's operations as typed objects (src/ratelimit/protocol/limiter-operations.ts):
// call(op, request) takes that operation's request only (checked by the compiler: every
// expected type error marked below fails `npm run typecheck` if its line compiles), and each
// versioned name stands for one layout, pinned here: changing a layout without a new name
// fails this test.
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { DecisionReply, DoneReply } from '../../../src/ratelimit/protocol/codec.js';
import { ADMIT_HEAD, CHARGE_HEAD, DECISION_REPLY, DONE_REPLY, REFUND_HEAD, RENEW_HEAD, SLOT_REFRESH_HEAD, SLOT_REFRESH_REPLY, WINDOW_FIGURES, WINDOW_VALUES } from '../../../src/ratelimit/protocol/layouts.js';
import { ADMIT, CHARGE, LIMITER_OPERATIONS, REFUND, RENEW, SLOT_REFRESH } from '../../../src/ratelimit/protocol/limiter-operations.js';
import type { OperationClient } from '../../../src/ratelimit/protocol/redis-operation-client.js';
import type { AdmitRequest, RenewRequest } from '../../../src/ratelimit/protocol/requests.js';
import type { ReplyOf, RequestOf } from '../../../src/redis/redis-operation.js';
import type { RateWindow } from '../../../src/ratelimit/rate-limiter.js';

const WINDOWS: RateWindow[] = [{ name: 'minute', limit: 10, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const }];
const admit: AdmitRequest = { keyHead: 'p:rl:{s}:', windows: WINDOWS, nowMs: 1, count: 1, leaseUnits: 0, leaseTokens: 0, refund: undefined, slot: undefined };
const renew: RenewRequest = { keyHead: 'p:rl:{s}:', windows: WINDOWS, units: 1, tokens: 0, leaseFromMs: 0 };

// The layouts as released, written out: what gateways of each version send and read.
const WINDOW_V1 = ['limit', 'windowMs', 'bucketMs', 'refundBucket', 'kind'];
const DECISION_V3 = ['admitted', 'retryAfterMs', 'nowMs', 'leaseUnits', 'leaseTokens', 'leaseValidMs', 'windowAdmitted', 'slotsFree', 'leaseCost'];
const FIGURES_V1 = ['remaining', 'resetMs', 'oldestMs'];

/** Every layout a versioned name stands for: a new layout needs a new name, and a row here. */
const PINNED: Record<string, { args: readonly string[]; reply: readonly string[] }> = {
  agw_admit_v3: {
    args: ['nowMs', 'count', 'leaseUnits', 'leaseTokens', 'leaseCost', 'refundUnits', 'refundTokens', 'refundCost', 'slotStreams', 'slotLeaseMs', 'slotHead', '|', ...WINDOW_V1],
    reply: [...DECISION_V3, '|', ...FIGURES_V1],
  },
  agw_renew_v3: { args: ['units', 'tokens', 'cost', 'leaseFromMs', '|', ...WINDOW_V1], reply: [...DECISION_V3, '|', ...FIGURES_V1] },
  agw_charge_v2: { args: ['nowMs', '|', ...WINDOW_V1], reply: ['nowMs'] },
  agw_refund_v3: { args: ['nowMs', 'units', 'tokens', 'cost', '|', ...WINDOW_V1], reply: ['nowMs'] },
  agw_slot_refresh_v1: { args: ['leaseMs'], reply: [] },
};

describe('limiter operations', () => {
  it('call(op, request) takes that operation\'s request and answers its typed reply', () => {
    expectTypeOf<RequestOf<typeof ADMIT>>().toEqualTypeOf<AdmitRequest>();
    expectTypeOf<ReplyOf<typeof ADMIT>>().toEqualTypeOf<DecisionReply>();
    expectTypeOf<ReplyOf<typeof CHARGE>>().toEqualTypeOf<DoneReply>();
    // Never run: the compiler checks these calls (an unused @ts-expect-error is itself an error).
    const misuse = (operations: OperationClient): void => {
      expectTypeOf(operations.call(RENEW, renew)).resolves.toEqualTypeOf<DecisionReply>();
      expectTypeOf(operations.call(SLOT_REFRESH, { key: 'k', leaseMs: 1, members: [] })).resolves.toEqualTypeOf<void>();
      // @ts-expect-error a renew request is not an admit request
      void operations.call(ADMIT, renew);
      // @ts-expect-error nor an admit request a renew one
      void operations.call(RENEW, admit);
      // @ts-expect-error encoded arguments are no request: only the operation encodes
      void operations.call(CHARGE, [1, 'p:rl:{s}:minute', '']);
      // @ts-expect-error an operation's name is not the operation
      void operations.call('admit', admit);
      // @ts-expect-error a refund needs its refund
      void operations.call(REFUND, { keyHead: 'p:rl:{s}:', windows: WINDOWS, nowMs: '' });
    };
    expect(misuse).toBeTypeOf('function');
  });

  it('each operation encodes only its own request shape', () => {
    // One window, admit's 11 head values after its key: the layout's length, not a number here.
    expect(ADMIT.encode(admit)).toHaveLength(1 + WINDOWS.length + ADMIT_HEAD.length + WINDOW_VALUES.length);
    expect(RENEW.encode(renew)).toHaveLength(1 + WINDOWS.length + RENEW_HEAD.length + WINDOW_VALUES.length);
    expect(SLOT_REFRESH.encode({ key: 'k', leaseMs: 30_000, members: ['a', 'b'] })).toEqual([1, 'k', 30_000, 'a', 'b']);
    // A charge with nothing to charge is refused before anything is sent.
    expect(() => CHARGE.encode({ keyHead: 'p:rl:{s}:', windows: WINDOWS, amounts: [0], nowMs: '' })).toThrow(TypeError);
  });

  it('each versioned name stands for one layout (a changed layout needs a new name)', () => {
    const layoutOf: Record<string, { args: readonly string[]; reply: readonly string[] }> = {
      [ADMIT.name]: { args: [...ADMIT_HEAD, '|', ...WINDOW_VALUES], reply: [...DECISION_REPLY.fields, '|', ...WINDOW_FIGURES] },
      [RENEW.name]: { args: [...RENEW_HEAD, '|', ...WINDOW_VALUES], reply: [...DECISION_REPLY.fields, '|', ...WINDOW_FIGURES] },
      [CHARGE.name]: { args: [...CHARGE_HEAD, '|', ...WINDOW_VALUES], reply: DONE_REPLY.fields },
      [REFUND.name]: { args: [...REFUND_HEAD, '|', ...WINDOW_VALUES], reply: DONE_REPLY.fields },
      [SLOT_REFRESH.name]: { args: SLOT_REFRESH_HEAD, reply: SLOT_REFRESH_REPLY.fields },
    };
    expect(Object.keys(layoutOf).sort()).toEqual(LIMITER_OPERATIONS.map((operation) => operation.name).sort());
    for (const [name, layout] of Object.entries(layoutOf)) expect({ name, ...layout }).toEqual({ name, ...PINNED[name] });
  });
});
