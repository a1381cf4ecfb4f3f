// The key file's format and the in-memory index a file store builds from it
// (file-key-store.ts has the store): parse, serialise, the last-used sidecar, and the
// listing order the index keeps so a page is a binary search and a short walk.
import type { KeyRecord } from './key-record.js';
import { fromStoredRecord, toStoredRecord } from './key-record-codec.js';
import { comparePositions } from './key-pages.js';
import type { KeyPosition } from './key-store.js';

export const KEY_FILE_VERSION = 1;

export class KeyFileError extends Error {
  constructor(readonly path: string, detail: string) {
    super(`key file ${path}: ${detail}`);
    this.name = 'KeyFileError';
  }
}

export function sidecarPathFor(path: string): string {
  return path.endsWith('.json') ? `${path.slice(0, -'.json'.length)}.last-used.json` : `${path}.last-used.json`;
}

export interface KeyIndex {
  byHash: Map<string, KeyRecord>;
  byId: Map<string, KeyRecord>;
  /** Every record in listing order, sorted once per load: a page is a binary search and a walk. */
  ordered: KeyRecord[];
  /** Keys not revoked that have an expiry, soonest first (file-key-expiry.ts walks it). */
  byExpiry: { expiresAtMs: number; record: KeyRecord }[];
}

export function emptyIndex(): KeyIndex {
  return { byHash: new Map(), byId: new Map(), ordered: [], byExpiry: [] };
}

export function buildIndex(records: KeyRecord[], path: string): KeyIndex {
  const index = emptyIndex();
  for (const record of records) {
    if (index.byId.has(record.keyId)) throw new KeyFileError(path, `key_id ${record.keyId} appears twice`);
    if (index.byHash.has(record.hash)) throw new KeyFileError(path, `two records share one hash (${record.keyId})`);
    index.byHash.set(record.hash, record);
    index.byId.set(record.keyId, record);
  }
  index.ordered = [...records].sort(comparePositions);
  for (const record of records) if (record.expiresAt !== null && record.revokedAt === null) index.byExpiry.push({ expiresAtMs: Date.parse(record.expiresAt), record });
  index.byExpiry.sort((a, b) => a.expiresAtMs - b.expiresAtMs);
  return index;
}

/** Index of the first record after `position` in `ordered`. */
export function firstAfter(ordered: readonly KeyRecord[], position: KeyPosition): number {
  let lo = 0;
  let hi = ordered.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (comparePositions(ordered[mid]!, position) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Everything that can change whether or how a key authenticates (and what it may do). */
export function authShape(record: KeyRecord): string {
  return `${record.keyId}|${record.account}|${record.plan}|${record.agents.join(',')}|${record.expiresAt}|${record.revokedAt}|${JSON.stringify(record.limits)}|${JSON.stringify(record.tools)}|${JSON.stringify(record.mcp ?? null)}`;
}


/** Parses the key file text; a missing file (undefined) is an empty store. */
export function parseKeyFile(text: string | undefined, path: string): KeyRecord[] {
  if (text === undefined || text.trim() === '') return [];
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new KeyFileError(path, `not valid JSON (${(error as Error).message})`);
  }
  if (!document || typeof document !== 'object' || Array.isArray(document)) throw new KeyFileError(path, 'expected an object {"version": 1, "keys": [...]}');
  const { version, keys } = document as { version?: unknown; keys?: unknown };
  if (version !== KEY_FILE_VERSION) throw new KeyFileError(path, `unsupported version ${JSON.stringify(version)} (expected ${KEY_FILE_VERSION})`);
  if (!Array.isArray(keys)) throw new KeyFileError(path, '"keys" must be an array');
  return keys.map((raw, i) => {
    try {
      return fromStoredRecord(raw);
    } catch (error) {
      throw new KeyFileError(path, `keys[${i}]: ${(error as Error).message}`);
    }
  });
}

export function serializeKeyFile(records: Iterable<KeyRecord>): string {
  return `${JSON.stringify({ version: KEY_FILE_VERSION, keys: [...records].map(toStoredRecord) }, null, 2)}\n`;
}

export function parseSidecar(text: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (text === undefined) return out;
  try {
    const document = JSON.parse(text) as { last_used?: Record<string, unknown> };
    for (const [keyId, at] of Object.entries(document.last_used ?? {})) {
      if (typeof at === 'string' && !Number.isNaN(Date.parse(at))) out.set(keyId, at);
    }
  } catch {
    // A damaged sidecar only loses last-used times; the next flush rewrites it.
  }
  return out;
}
