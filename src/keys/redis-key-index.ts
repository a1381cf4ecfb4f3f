// The Redis key store's listing indexes (docs/operations.md, "Key layout"), with T the
// store's hash tag `{${prefix}keys}:` so every index sits in the records' Cluster slot:
//   T:ix:all                 ZSET (scores 0, members in lexical order) of every key
//   T:ix:account:${account}  the same, per account
//   T:ix:agent:${agent}      the same, per agent the key may call
//   T:ix:status:${status}    the same, per status (active, expired, revoked)
//   T:ix:name:${p}           the same, per lowercased name prefix p of 1, 2 and 3 characters
//   T:ix:expiry              ZSET score = expires_at (ms), of keys neither revoked nor yet
//                            moved to status:expired (the sweep moves them when due)
//   T:ix:expired:unannounced ZSET score = expires_at (ms), of keys the sweep moved that no
//                            expiry sweeper announced yet (key.expired; kept a day at most)
//   T:notify:warned-until    STRING ms: how far key.expiring warnings were sent
// A member is `${created_at ms, 15 digits}:${key_id}`, so lexical order is the listing order
// (created_at, key_id) and a cursor is a ZRANGE BYLEX bound. The record's hash keeps its
// member (field `ix`) and its lowercased name (`name_lc`) for the scripts.
import type { KeyRecord } from './key-record.js';
import { nameKey } from './key-pages.js';
import type { KeyPosition, KeyStatusFilter } from './key-store.js';

/** Name prefixes of up to this many characters have their own index. */
export const NAME_INDEX_DEPTH = 3;
const MS_DIGITS = 15;

export function indexMember(position: KeyPosition): string {
  const ms = Math.max(0, Date.parse(position.createdAt) || 0);
  return `${String(ms).padStart(MS_DIGITS, '0')}:${position.keyId}`;
}

/** The position a member stands for (its creation time at millisecond precision). */
export function positionOfMember(member: string): KeyPosition {
  return { createdAt: new Date(Number(member.slice(0, MS_DIGITS))).toISOString(), keyId: member.slice(MS_DIGITS + 1) };
}

/** The first characters (code points) of a lowercased name or prefix: the name index it walks. */
export function nameBucket(lowered: string): string {
  return [...lowered].slice(0, NAME_INDEX_DEPTH).join('');
}

export class KeyIndexNames {
  constructor(readonly head: string) {}
  all(): string {
    return `${this.head}ix:all`;
  }
  account(account: string): string {
    return `${this.head}ix:account:${account}`;
  }
  agent(agent: string): string {
    return `${this.head}ix:agent:${agent}`;
  }
  status(status: KeyStatusFilter): string {
    return `${this.head}ix:status:${status}`;
  }
  name(bucket: string): string {
    return `${this.head}ix:name:${bucket}`;
  }
  expiry(): string {
    return `${this.head}ix:expiry`;
  }
  expiredUnannounced(): string {
    return `${this.head}ix:expired:unannounced`;
  }
  warnedUntil(): string {
    return `${this.head}notify:warned-until`;
  }
}

/** One index entry: key, score (0 for the lexical indexes), member. */
export type IndexEntry = [key: string, score: number, member: string];

/**
 * Where `record` belongs in the indexes when written: a key not revoked is active, and with
 * an expiry also in the expiry index, from which the sweep moves it to expired when due (the
 * sweep runs at the time a listing asks about, so status pages agree with the rows' status).
 */
export function indexEntries(names: KeyIndexNames, record: KeyRecord): IndexEntry[] {
  const member = indexMember(record);
  const entries: IndexEntry[] = [
    [names.all(), 0, member],
    [names.account(record.account), 0, member],
    ...record.agents.map((agent): IndexEntry => [names.agent(agent), 0, member]),
  ];
  const lowered = [...nameKey(record.name)];
  for (let n = 1; n <= Math.min(NAME_INDEX_DEPTH, lowered.length); n++) entries.push([names.name(lowered.slice(0, n).join('')), 0, member]);
  if (record.revokedAt !== null) {
    entries.push([names.status('revoked'), 0, member]);
  } else {
    entries.push([names.status('active'), 0, member]);
    if (record.expiresAt !== null) entries.push([names.expiry(), Date.parse(record.expiresAt), member]);
  }
  return entries;
}

/**
 * The flat index operations a script applies (INDEX_OPS_LUA): a count, then per operation
 * `a` (ZADD) or `r` (ZREM), key, score, member. An update removes where the key was (in
 * either time status: the sweep may not have moved it yet) and adds where it is now.
 */
export function indexOps(add: readonly IndexEntry[], remove: readonly IndexEntry[] = []): string[] {
  const out = [String(add.length + remove.length)];
  for (const [key, score, member] of remove) out.push('r', key, String(score), member);
  for (const [key, score, member] of add) out.push('a', key, String(score), member);
  return out;
}

/** Every entry `record` may hold, swept or not: what an update removes before it adds. */
export function possibleEntries(names: KeyIndexNames, record: KeyRecord): IndexEntry[] {
  const entries = indexEntries(names, record);
  if (record.revokedAt === null) entries.push([names.status('expired'), 0, indexMember(record)]);
  return entries;
}

/** The hash fields the indexes rely on, beside the record's own. */
export function indexFields(record: KeyRecord): string[] {
  return ['ix', indexMember(record), 'name_lc', nameKey(record.name)];
}
