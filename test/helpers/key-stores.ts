// Key stores for tests: a file store that polls fast, a spy that counts lookups and can
// pretend to be down, and the config slice KeyService needs.
import { FileKeyStore } from '../../src/keys/file-key-store.js';
import type { KeyRecord } from '../../src/keys/key-record.js';
import { StoreUnavailableError, type KeyChange, type KeyPage, type KeyPageQuery, type KeyStore, type KeyUpdate, type LastUsedEntry, type InvalidationListener } from '../../src/keys/key-store.js';
import { silentLogger } from '../../src/logger.js';

/** A plan without limits. */
export const NO_LIMITS = { requests: [], tokens: [], windows: [] };

export const testConfig = {
  plans: new Map([
    ['starter', NO_LIMITS],
    ['pro', NO_LIMITS],
  ]),
  agents: new Map([
    ['support', {} as never],
    ['sales', {} as never],
  ]),
};

export function openFileStore(path: string, watch = false): Promise<FileKeyStore> {
  return FileKeyStore.open({ path, logger: silentLogger, watch, pollIntervalMs: 100 });
}

/** Delegates to a real store, counts lookups, and can pretend to be unreachable. */
export class SpyStore implements KeyStore {
  readonly kind;
  findByHashCalls = 0;
  down = false;
  /** Runs inside findByHash, while the lookup is in flight. */
  beforeFind: (() => void) | undefined;
  constructor(readonly inner: KeyStore) {
    this.kind = inner.kind;
  }
  private check(): void {
    if (this.down) throw new StoreUnavailableError('pretend outage');
  }
  async findByHash(hash: string): Promise<KeyRecord | undefined> {
    this.findByHashCalls++;
    this.beforeFind?.();
    this.check();
    return this.inner.findByHash(hash);
  }
  async findById(keyId: string): Promise<KeyRecord | undefined> {
    this.check();
    return this.inner.findById(keyId);
  }
  async listPage(query: KeyPageQuery): Promise<KeyPage> {
    this.check();
    return this.inner.listPage(query);
  }
  async create(record: KeyRecord): Promise<void> {
    this.check();
    return this.inner.create(record);
  }
  async revoke(keyId: string, atIso: string): Promise<KeyRecord | undefined> {
    this.check();
    return this.inner.revoke(keyId, atIso);
  }
  async update(keyId: string, change: KeyChange): Promise<KeyUpdate | undefined> {
    this.check();
    return this.inner.update(keyId, change);
  }
  async touchLastUsed(entries: readonly LastUsedEntry[]): Promise<void> {
    this.check();
    return this.inner.touchLastUsed(entries);
  }
  private readonly listeners = new Set<InvalidationListener>();
  onInvalidate(listener: InvalidationListener): () => void {
    this.listeners.add(listener);
    const detach = this.inner.onInvalidate(listener);
    return () => {
      this.listeners.delete(listener);
      detach();
    };
  }
  /** What a store's subscriber does: tells every listener that `hash` (or everything) changed. */
  emitInvalidation(hash: string): void {
    for (const listener of this.listeners) listener(hash);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
