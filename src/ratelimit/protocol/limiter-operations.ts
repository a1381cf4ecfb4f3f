// The limiter's operations, each one typed object (src/redis/redis-operation.ts): its
// versioned name, its Lua source (operations.ts), its encoder and its decoder (codec.ts). The
// client (redis-operation-client.ts) takes an operation and that operation's request only,
// so an admit request can never go to renew; the decoder gets the request it answers (its
// windows say how many figures the reply holds), so nothing is allocated to pair them.
import type { RedisOperation } from '../../redis/redis-operation.js';
import {
  decodeAdmit,
  decodeCharge,
  decodeRefund,
  decodeRenew,
  decodeSlotRefresh,
  encodeAdmit,
  encodeCharge,
  encodeRefund,
  encodeRenew,
  encodeSlotRefresh,
} from './codec.js';
import { OPERATION, OPERATION_SOURCES } from './operations.js';
import type { AdmitRequest, ChargeRequest, DecisionReply, DoneReply, RefundRequest, RenewRequest } from './requests.js';

/** The slots one instance holds in one subject's set, to keep alive. */
export interface SlotRefreshRequest {
  key: string;
  leaseMs: number;
  members: Iterable<string>;
}

export const ADMIT: RedisOperation<AdmitRequest, DecisionReply> = {
  name: OPERATION.admit,
  source: OPERATION_SOURCES.admit,
  numberOfKeys: undefined,
  encode: encodeAdmit,
  decode: (reply, request) => decodeAdmit(reply, request.windows.length),
};

export const RENEW: RedisOperation<RenewRequest, DecisionReply> = {
  name: OPERATION.renew,
  source: OPERATION_SOURCES.renew,
  numberOfKeys: undefined,
  encode: encodeRenew,
  decode: (reply, request) => decodeRenew(reply, request.windows.length),
};

/** Callers send a charge only when it has an amount (chargeAmounts returns undefined otherwise). */
export const CHARGE: RedisOperation<ChargeRequest, DoneReply> = {
  name: OPERATION.charge,
  source: OPERATION_SOURCES.charge,
  numberOfKeys: undefined,
  encode: (request) => {
    const args = encodeCharge(request);
    if (args === undefined) throw new TypeError('a charge without an amount to charge');
    return args;
  },
  decode: (reply) => decodeCharge(reply),
};

export const REFUND: RedisOperation<RefundRequest, DoneReply> = {
  name: OPERATION.refund,
  source: OPERATION_SOURCES.refund,
  numberOfKeys: undefined,
  encode: encodeRefund,
  decode: (reply) => decodeRefund(reply),
};

export const SLOT_REFRESH: RedisOperation<SlotRefreshRequest, void> = {
  name: OPERATION.slotRefresh,
  source: OPERATION_SOURCES.slotRefresh,
  numberOfKeys: undefined,
  encode: (request) => encodeSlotRefresh(request.key, request.leaseMs, request.members),
  decode: (reply) => decodeSlotRefresh(reply),
};

/** Every limiter operation: what an OperationClient registers. */
export const LIMITER_OPERATIONS = [ADMIT, RENEW, CHARGE, REFUND, SLOT_REFRESH] as const;

export type LimiterOperation = (typeof LIMITER_OPERATIONS)[number];
