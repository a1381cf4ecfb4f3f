// What both key stores share about listing pages (docs/admin-api.md, "List keys"): the one
// order, the case-insensitive name match, the scan budget, and reading every page in turn.
import type { KeyRecord } from './key-record.js';
import { keyStatus } from './key-record-codec.js';
import type { KeyPage, KeyPageQuery, KeyPosition, KeyStore } from './key-store.js';

/**
 * At most this many index entries are looked at for one page beyond the page itself: a
 * filter that matches rarely answers a short page and a cursor instead of walking on.
 */
export const PAGE_SCAN_BUDGET = 4_000;

/** The order of every listing: created_at, then key_id (ISO strings of one format sort as times). */
export function comparePositions(a: KeyPosition, b: KeyPosition): number {
  return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0;
}

/** The form names are matched in: lowercased the same way for a name and a prefix. */
export function nameKey(name: string): string {
  return name.toLowerCase();
}

/** Whether `record` passes every filter of `query` except the position. */
export function matchesPage(record: KeyRecord, query: KeyPageQuery): boolean {
  return (
    (query.account === undefined || record.account === query.account) &&
    (query.agent === undefined || record.agents.includes(query.agent)) &&
    (query.status === undefined || keyStatus(record, query.nowMs) === query.status) &&
    (query.namePrefix === undefined || nameKey(record.name).startsWith(query.namePrefix))
  );
}

/** Every key matching `query`'s filters, page by page (bounded memory: one page at a time). */
export async function* eachKeyPage(store: KeyStore, query: Omit<KeyPageQuery, 'after'>): AsyncGenerator<KeyPage> {
  let after: KeyPosition | undefined;
  for (;;) {
    const page = await store.listPage({ ...query, after });
    yield page;
    if (page.next === null) return;
    after = page.next;
  }
}

/** Every matching key in one array: for tests and small stores only (it holds them all). */
export async function collectKeys(store: KeyStore, query: Partial<Omit<KeyPageQuery, 'after'>> = {}): Promise<KeyRecord[]> {
  const out: KeyRecord[] = [];
  for await (const page of eachKeyPage(store, { limit: 500, nowMs: Date.now(), ...query })) out.push(...page.records);
  return out;
}
