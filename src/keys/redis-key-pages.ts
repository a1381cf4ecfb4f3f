// One page of the Redis key store's listing (docs/admin-api.md, "List keys"): the filters
// become the indexes a key must be in (redis-key-index.ts), the page script walks the
// smallest of them and checks the rest, so a page costs O(limit + scan budget) Redis work
// whatever the number of keys. A status filter first sweeps (a bounded batch of) keys whose
// expiry is due; when more were due, the store drains the rest in the background
// (RedisKeyStore.drainExpired), so no page waits for a large backlog.
import type { RedisClient } from '../redis/redis-client.js';
import { callOperation } from '../redis/redis-operation.js';
import { PAGE_SCAN_BUDGET } from './key-pages.js';
import type { KeyPage, KeyPageQuery } from './key-store.js';
import type { KeyRecord } from './key-record.js';
import { indexMember, nameBucket, positionOfMember, type KeyIndexNames } from './redis-key-index.js';
import { pairsToObject } from './redis-key-fields.js';
import { KEY_PAGE, KEY_SWEEP } from './redis-key-operations.js';

/** Keys moved from active to expired per sweep call (a few ms of Redis work). */
export const SWEEP_BATCH = 1_000;

/** A key expired longer ago than this and not announced yet (no gateway sending notifications) never is. */
export const UNANNOUNCED_RETENTION_MS = 86_400_000;

/** One sweep call: moves up to SWEEP_BATCH due keys; true when there may be more. */
export async function sweepExpired(redis: RedisClient, names: KeyIndexNames, nowMs: number): Promise<boolean> {
  const moved = await callOperation(redis, KEY_SWEEP, { expiryIndex: names.expiry(), keyHead: names.head, nowMs, batch: SWEEP_BATCH, dropBeforeMs: nowMs - UNANNOUNCED_RETENTION_MS });
  return moved === SWEEP_BATCH;
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
  redis: RedisClient,
  names: KeyIndexNames,
  query: KeyPageQuery,
  decode: (hash: string, fields: Record<string, string>) => KeyRecord | undefined,
): Promise<KeyPage & { moreDue: boolean }> {
  const moreDue = query.status !== undefined && (await sweepExpired(redis, names, query.nowMs));
  const start = query.after === undefined ? '-' : `(${indexMember(query.after)}`;
  const indexes = requiredIndexes(names, query);
  // Until swept, a due key is still in status:active: the script leaves it out there.
  const notDueBy = query.status === 'active' ? String(query.nowMs) : '';
  const page = await callOperation(redis, KEY_PAGE, {
    allIndex: names.all(),
    keyHead: names.head,
    start,
    limit: query.limit,
    scanBudget: PAGE_SCAN_BUDGET,
    namePrefix: query.namePrefix ?? '',
    notDueBy,
    indexes,
  });
  const records: KeyRecord[] = [];
  for (const row of page.rows) {
    const record = decode(row.hash, pairsToObject(row.fields));
    if (record) records.push(record);
  }
  return { records, next: page.state === 'more' && page.cursor !== '' ? positionOfMember(page.cursor) : null, moreDue };
}
