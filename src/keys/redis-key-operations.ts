// The key store's scripts as typed operations (src/redis/redis-operation.ts): each its
// versioned name, its source (redis-key-scripts.ts, redis-key-list-scripts.ts), the encoder of
// a typed request and the decoder of its tagged reply into named fields. A decoder throws
// UnexpectedReplyError on anything else; the store's run() turns that into
// StoreUnavailableError, counted like any Redis failure.
import { UnexpectedReplyError, isReplyOf, type RedisOperation, type ReplyLayout } from '../redis/redis-operation.js';
import { CREATE_SCRIPT, KEY_SCRIPT, MIGRATE_SCRIPT, OUTCOME_REPLY, REVOKE_REPLY, REVOKE_SCRIPT, TOUCH_REPLY, TOUCH_SCRIPT, UPDATE_SCRIPT } from './redis-key-scripts.js';
import { KEY_LIST_SCRIPT, LIST_PAGE_SCRIPT, PAGE_REPLY, PAGE_ROW, PAGE_ROW_AT, SWEEP_REPLY, SWEEP_SCRIPT } from './redis-key-list-scripts.js';

export interface CreateKeyRequest {
  recordKey: string;
  idKey: string;
  hash: string;
  keyId: string;
  channel: string;
  /** The record's and its index fields' field/value pairs. */
  fields: readonly string[];
  /** redis-key-index.ts indexOps. */
  indexOps: readonly string[];
}

export interface RevokeKeyRequest {
  recordKey: string;
  atIso: string;
  channel: string;
  hash: string;
  keyHead: string;
}

export interface TouchKeyRequest {
  recordKey: string;
  atIso: string;
}

export interface UpdateKeyRequest {
  recordKey: string;
  /** The record's rev the change was computed from: written only while it still is. */
  rev: string;
  channel: string;
  hash: string;
  sets: readonly string[];
  deletes: readonly string[];
  indexOps: readonly string[];
  /** A rotation's new key, created in the same step. */
  create?: { recordKey: string; idKey: string; hash: string; keyId: string; fields: readonly string[] };
}

export interface MigrateKeyRequest {
  recordKey: string;
  rev: string;
  legacyAll: string;
  legacyAccount: string;
  keyId: string;
  fields: readonly string[];
  indexOps: readonly string[];
}

export interface KeyPageRequest {
  /** The all index: only routes the call to the store's slot. */
  allIndex: string;
  keyHead: string;
  /** ZRANGE BYLEX start: '-' or '(' + member. */
  start: string;
  limit: number;
  scanBudget: number;
  /** Lowercased; '' for none. */
  namePrefix: string;
  /** ms, or '' for none (redis-key-list-scripts.ts). */
  notDueBy: string;
  indexes: readonly string[];
}

export interface SweepKeysRequest {
  /** The expiry index: only routes the call to the store's slot. */
  expiryIndex: string;
  keyHead: string;
  nowMs: number;
  batch: number;
  /** Unannounced expiries older than this (ms) are dropped. */
  dropBeforeMs: number;
}

export type CreateOutcome = 'ok' | 'hash_exists' | 'id_exists';
export type UpdateOutcome = CreateOutcome | 'gone' | 'conflict';
export type MigrateOutcome = 'ok' | 'gone' | 'conflict';
export type RevokeReply = { outcome: 'gone' } | { outcome: 'revoked'; fields: string[] };
export interface KeyPageReply {
  state: 'end' | 'more';
  cursor: string;
  rows: Array<{ hash: string; fields: string[] }>;
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

/** The outcome word of an OUTCOME_REPLY, if it is one `words` allows. */
function outcomeOf<Word extends string>(tag: string, reply: unknown, words: readonly Word[]): Word {
  if (isReplyOf(tag, OUTCOME_REPLY, reply)) {
    const word = reply[OUTCOME_REPLY.at.outcome];
    if (words.includes(word as Word)) return word as Word;
  }
  throw new UnexpectedReplyError(tag, reply);
}

function countOf(tag: string, layout: ReplyLayout<'moved'>, reply: unknown): number {
  if (isReplyOf(tag, layout, reply) && Number.isInteger(reply[layout.at.moved])) return reply[layout.at.moved] as number;
  throw new UnexpectedReplyError(tag, reply);
}

export const KEY_CREATE: RedisOperation<CreateKeyRequest, CreateOutcome> = {
  name: KEY_SCRIPT.create,
  source: CREATE_SCRIPT,
  numberOfKeys: 2,
  encode: (r) => [r.recordKey, r.idKey, r.hash, r.keyId, r.channel, String(r.fields.length / 2), ...r.fields, ...r.indexOps],
  decode: (reply) => outcomeOf(KEY_SCRIPT.create, reply, ['ok', 'hash_exists', 'id_exists']),
};

export const KEY_REVOKE: RedisOperation<RevokeKeyRequest, RevokeReply> = {
  name: KEY_SCRIPT.revoke,
  source: REVOKE_SCRIPT,
  numberOfKeys: 1,
  encode: (r) => [r.recordKey, r.atIso, r.channel, r.hash, r.keyHead],
  decode: (reply) => {
    if (isReplyOf(KEY_SCRIPT.revoke, REVOKE_REPLY, reply)) {
      const outcome = reply[REVOKE_REPLY.at.outcome];
      const fields = reply[REVOKE_REPLY.at.fields];
      if (outcome === 'gone') return { outcome };
      if (outcome === 'revoked' && isStringList(fields)) return { outcome, fields };
    }
    throw new UnexpectedReplyError(KEY_SCRIPT.revoke, reply);
  },
};

export const KEY_TOUCH: RedisOperation<TouchKeyRequest, boolean> = {
  name: KEY_SCRIPT.touch,
  source: TOUCH_SCRIPT,
  numberOfKeys: 1,
  encode: (r) => [r.recordKey, r.atIso],
  decode: (reply) => countOf(KEY_SCRIPT.touch, TOUCH_REPLY, reply) === 1,
};

/** The key count leads (1, or 3 with a rotation): the script's keys vary. */
export const KEY_UPDATE: RedisOperation<UpdateKeyRequest, UpdateOutcome> = {
  name: KEY_SCRIPT.update,
  source: UPDATE_SCRIPT,
  numberOfKeys: undefined,
  encode: (r) => {
    const keys = r.create === undefined ? [r.recordKey] : [r.recordKey, r.create.recordKey, r.create.idKey];
    const args: Array<string | number> = [keys.length, ...keys, r.rev, r.channel, r.hash, String(r.sets.length / 2), ...r.sets, String(r.deletes.length), ...r.deletes, ...r.indexOps];
    if (r.create !== undefined) args.push(r.create.hash, r.create.keyId, ...r.create.fields);
    return args;
  },
  decode: (reply) => outcomeOf(KEY_SCRIPT.update, reply, ['ok', 'gone', 'conflict', 'hash_exists', 'id_exists']),
};

export const KEY_MIGRATE: RedisOperation<MigrateKeyRequest, MigrateOutcome> = {
  name: KEY_SCRIPT.migrate,
  source: MIGRATE_SCRIPT,
  numberOfKeys: 1,
  encode: (r) => [r.recordKey, r.rev, r.legacyAll, r.legacyAccount, r.keyId, String(r.fields.length / 2), ...r.fields, ...r.indexOps],
  decode: (reply) => outcomeOf(KEY_SCRIPT.migrate, reply, ['ok', 'gone', 'conflict']),
};

export const KEY_PAGE: RedisOperation<KeyPageRequest, KeyPageReply> = {
  name: KEY_LIST_SCRIPT.page,
  source: LIST_PAGE_SCRIPT,
  numberOfKeys: 1,
  encode: (r) => [r.allIndex, r.keyHead, r.start, String(r.limit), String(r.scanBudget), r.namePrefix, r.notDueBy, String(r.indexes.length), ...r.indexes],
  decode: (reply) => {
    const tag = KEY_LIST_SCRIPT.page;
    if (!isReplyOf(tag, PAGE_REPLY, reply, true) || (reply.length - PAGE_REPLY.length) % PAGE_ROW.length !== 0) throw new UnexpectedReplyError(tag, reply);
    const state = reply[PAGE_REPLY.at.state];
    const cursor = reply[PAGE_REPLY.at.cursor];
    if ((state !== 'end' && state !== 'more') || typeof cursor !== 'string') throw new UnexpectedReplyError(tag, reply);
    const rows: KeyPageReply['rows'] = [];
    for (let row = PAGE_REPLY.length; row < reply.length; row += PAGE_ROW.length) {
      const hash = reply[row + PAGE_ROW_AT.hash];
      const fields = reply[row + PAGE_ROW_AT.fields];
      if (typeof hash !== 'string' || !isStringList(fields)) throw new UnexpectedReplyError(tag, reply);
      rows.push({ hash, fields });
    }
    return { state, cursor, rows };
  },
};

export const KEY_SWEEP: RedisOperation<SweepKeysRequest, number> = {
  name: KEY_LIST_SCRIPT.sweep,
  source: SWEEP_SCRIPT,
  numberOfKeys: 1,
  encode: (r) => [r.expiryIndex, r.keyHead, String(r.nowMs), String(r.batch), String(r.dropBeforeMs)],
  decode: (reply) => countOf(KEY_LIST_SCRIPT.sweep, SWEEP_REPLY, reply),
};

/** Every script of the key store: what its connection registers. */
export const KEY_OPERATIONS = [KEY_CREATE, KEY_REVOKE, KEY_TOUCH, KEY_UPDATE, KEY_MIGRATE, KEY_PAGE, KEY_SWEEP] as const;
