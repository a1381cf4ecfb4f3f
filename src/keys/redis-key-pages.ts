// One page of the Redis key store's listing (docs/admin-api.md, "List keys"): the filters
// become the indexes a key must be in (redis-key-index.ts), the page script walks the
// smallest of them and checks the rest, so a page costs O(limit + scan budget) Redis work
// whatever the number of keys. A status filter first sweeps (a bounded batch of) keys whose
// expiry is due; when more were due, the store drains the rest in the background
// (RedisKeyStore.drainExpired), so no page waits for a large backlog.
import type { RedisClient } from '../redis/redis-client.js';
import { PAGE_SCAN_BUDGET } from './key-pages.js';
import type { KeyPage, KeyPageQuery } from './key-store.js';
import type { KeyRecord } from './key-record.js';
import { indexMember, nameBucket, positionOfMember, type KeyIndexNames } from './redis-key-index.js';
import { pairsToObject } from './redis-key-fields.js';

export interface PageCommands {
  agentgwKeyPage(...args: string[]): Promise<unknown[]>;
  agentgwKeySweep(...args: string[]): Promise<number>;
}

/** Keys moved from active to expired per sweep call (a few ms of Redis work). */
export const SWEEP_BATCH = 1_000;

/** A key expired longer ago than this and not announced yet (no gateway sending notifications) never is. */
export const UNANNOUNCED_RETENTION_MS = 86_400_000;

/** One sweep call: moves up to SWEEP_BATCH due keys; true when there may be more. */
export async function sweepExpired(redis: PageCommands, names: KeyIndexNames, nowMs: number): Promise<boolean> {
  return (await redis.agentgwKeySweep(names.expiry(), names.head, String(nowMs), String(SWEEP_BATCH), String(nowMs - UNANNOUNCED_RETENTION_MS))) === SWEEP_BATCH;
}

/** The indexes a key must be in to match `query` (the whole index when there is no filter). */
function requiredIndexes(names: KeyIndexNames, query: KeyPageQuery): string[] {
  const keys: string[] = [];
  if (query.account !== undefined) keys.push(names.account(query.account));
  if (query.agent !== undefined) keys.push(names.agent(query.agent));
  if (query.status !== undefined) keys.push(names.status(query.status));
  if (query.namePrefix !== undefined && query.namePrefix !== '') keys.push(names.name(nameBucket(query.namePrefix)));
  if (keys.length === 0) keys.push(names.all());
  return keys;
}

/** A page, and whether its sweep left due keys behind (then the caller drains them). */
export async function readKeyPage(
  redis: RedisClient & PageCommands,
  names: KeyIndexNames,
  query: KeyPageQuery,
  decode: (hash: string, fields: Record<string, string>) => KeyRecord | undefined,
): Promise<KeyPage & { moreDue: boolean }> {
  const moreDue = query.status !== undefined && (await sweepExpired(redis, names, query.nowMs));
  const start = query.after === undefined ? '-' : `(${indexMember(query.after)}`;
  const indexes = requiredIndexes(names, query);
  // Until swept, a due key is still in status:active: the script leaves it out there.
  const notDueBy = query.status === 'active' ? String(query.nowMs) : '';
  const reply = await redis.agentgwKeyPage(names.all(), names.head, start, String(query.limit), String(PAGE_SCAN_BUDGET), query.namePrefix ?? '', notDueBy, String(indexes.length), ...indexes);
  const records: KeyRecord[] = [];
  for (let i = 2; i + 1 < reply.length; i += 2) {
    const record = decode(String(reply[i]), pairsToObject(reply[i + 1] as string[]));
    if (record) records.push(record);
  }
  const cursor = String(reply[1]);
  return { records, next: reply[0] === 'more' && cursor !== '' ? positionOfMember(cursor) : null, moreDue };
}
