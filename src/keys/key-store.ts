// Where key records live (docs/design.md, "Keys"): one interface, a file store (embedded) and a
// Redis store (shared). The authenticator caches in front of it; the CLI and dashboard write to
// it.
import type { KeyRecord } from './key-record.js';

export interface LastUsedEntry {
  /** SHA-256 hex of the key (what the request path knows without a lookup). */
  hash: string;
  atIso: string;
}

/** A place in the one order of key listings, (created_at, key_id): a page starts after it. */
export interface KeyPosition {
  createdAt: string;
  keyId: string;
}

export type KeyStatusFilter = 'active' | 'expired' | 'revoked';

/** One page of a listing: every filter given must hold (docs/admin-api.md, "List keys"). */
export interface KeyPageQuery {
  account?: string | undefined;
  agent?: string | undefined;
  status?: KeyStatusFilter | undefined;
  /** Lowercased (String.prototype.toLowerCase) prefix of the key's name. */
  namePrefix?: string | undefined;
  after?: KeyPosition | undefined;
  limit: number;
  /** The time `status` is judged at. */
  nowMs: number;
}

/**
 * Up to `limit` records in (created_at, key_id) order, and where the next page starts (null:
 * nothing more). A store may stop early at its scan budget with a short (even empty) page
 * and a `next`, so one page's work stays bounded however rare the matches are.
 */
export interface KeyPage {
  records: KeyRecord[];
  next: KeyPosition | null;
}

/** What an update writes: the changed record, and with a rotation the key that replaces it. */
export interface KeyUpdate {
  record: KeyRecord;
  create?: KeyRecord;
}

/**
 * Computes an update from the record as stored now. It may run more than once (the Redis
 * store retries when another writer got there first), so it must not have side effects;
 * it may throw to refuse the update, and then nothing is written.
 */
export type KeyChange = (current: KeyRecord) => KeyUpdate;

/** A hash whose record changed, or '*' when anything may have changed (reload, reconnect). */
export type InvalidationListener = (hash: string) => void;
export const INVALIDATE_ALL = '*';

/** A key an expiry announcement is about; `ref` is the store's own handle on the entry. */
export interface ExpiryEntry {
  keyId: string;
  expiresAtMs: number;
  ref: string;
}

/**
 * The store's keys by expiry, for the expiry sweeper (key-expiry-sweeper.ts): every call
 * costs O(log n + entries returned), never a walk over all keys.
 */
export interface KeyExpiryIndex {
  /** Keys neither revoked nor swept whose expiry is in (afterMs, toMs], soonest first, at most `limit`. */
  expiringBetween(afterMs: number, toMs: number, limit: number): Promise<ExpiryEntry[]>;
  /** Keys whose expiry came by `nowMs` and that no sweeper announced yet, at most `limit`. */
  expiredUnannounced(nowMs: number, limit: number): Promise<ExpiryEntry[]>;
  markAnnounced(entries: readonly ExpiryEntry[]): Promise<void>;
  /** How far (ms) key.expiring warnings have been sent, shared by the store's sweepers (0: not yet). */
  readWarnedUntil(): Promise<number>;
  writeWarnedUntil(ms: number): Promise<void>;
}

export interface KeyStore {
  readonly kind: 'file' | 'redis';
  /** The expiry index (both stores have one; optional for stand-ins in tests). */
  readonly expiry?: KeyExpiryIndex;
  findByHash(hash: string): Promise<KeyRecord | undefined>;
  findById(keyId: string): Promise<KeyRecord | undefined>;
  listPage(query: KeyPageQuery): Promise<KeyPage>;
  /** Rejects with KeyConflictError when the key id or hash already exists. */
  create(record: KeyRecord): Promise<void>;
  /** Sets revoked_at (first revocation wins); undefined when no such key. */
  revoke(keyId: string, atIso: string): Promise<KeyRecord | undefined>;
  /**
   * Read-modify-write of one key that no concurrent writer can undo (the file's lock; a
   * revision checked by a Redis script). Only the key's settings change (name, plan, agents,
   * expiry, metadata, limits, rotation links); revocation and last use keep their own
   * writes. Running gateways hear of it as of a revocation. Undefined when no such key.
   */
  update(keyId: string, change: KeyChange): Promise<KeyUpdate | undefined>;
  /** Moves last_used_at forward; unknown hashes are ignored. */
  touchLastUsed(entries: readonly LastUsedEntry[]): Promise<void>;
  /** Returns the unsubscribe function. */
  onInvalidate(listener: InvalidationListener): () => void;
  close(): Promise<void>;
}

/** The store cannot answer right now (Redis down or timing out): not "no such key". */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

export class KeyConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyConflictError';
  }
}
