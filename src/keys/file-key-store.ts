// The embedded key store: a JSON file `{"version": 1, "keys": [...]}` (snake_case records)
// written only by key operations (the CLI), atomically, under a lock file; a running
// gateway holds an in-memory index and reloads it when the file changes (fs.watch and a stat
// poll), and on a key it does not know it looks at the file first: a key the CLI has just
// written works at once, however late the watch event comes on a busy machine.
//
// last_used_at lives in a sidecar file (`keys.last-used.json` beside `keys.json`), written
// only by gateways: the CLI and a gateway then never rewrite the same file, so neither can
// lose the other's change, and a last-used flush does not make every gateway reload keys.
//
// Sized for what one operator edits by hand or with the CLI (docs/keys.md, "Which store"):
// every write rewrites the whole file. The file format and index live apart
// (key-file-format.ts), the atomic-write and lock helpers too (src/files.ts). Over 300
// lines as one file: the reads, the writes and the three reload triggers share the file's
// signature and write generation that keep the index from going back in time.
import { InvalidationListeners } from './invalidation-listeners.js';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from '../logger.js';
import type { KeyRecord } from './key-record.js';
import { laterIso } from './key-record-codec.js';
import { authShape, buildIndex, emptyIndex, firstAfter, KEY_FILE_VERSION, KeyFileError, parseKeyFile, parseSidecar, serializeKeyFile, sidecarPathFor, type KeyIndex } from './key-file-format.js';
import { matchesPage, PAGE_SCAN_BUDGET } from './key-pages.js';
import { INVALIDATE_ALL, KeyConflictError, type InvalidationListener, type KeyChange, type KeyExpiryIndex, type KeyPage, type KeyPageQuery, type KeyStore, type KeyUpdate, type LastUsedEntry } from './key-store.js';
import { readTextIfExists, withFileLock, writeFileAtomic } from '../files.js';
import { fileExpiryIndex, marksPathFor } from './file-key-expiry.js';

export { KEY_FILE_VERSION, KeyFileError, parseKeyFile, sidecarPathFor } from './key-file-format.js';

export interface FileKeyStoreOptions {
  path: string;
  logger: Logger;
  /** Watch the file and reload on change (the gateway); off for one-shot CLI use. */
  watch: boolean;
  /** Fallback stat poll for filesystems where fs.watch misses events. */
  pollIntervalMs?: number;
  /** Use fs.watch as well as the poll (default true; tests turn it off to check the poll alone). */
  fsWatch?: boolean;
}

export class FileKeyStore implements KeyStore {
  readonly kind = 'file' as const;
  readonly sidecarPath: string;
  private index: KeyIndex = emptyIndex();
  /** The expiry sweeper's view; its marks persist only for a watching (gateway) store. */
  readonly expiry: KeyExpiryIndex;
  /** last_used_at by key id: sidecar contents plus this process's own touches. */
  private lastUsed = new Map<string, string>();
  private readonly listeners: InvalidationListeners;
  private watcher: FSWatcher | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private signature = '';
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;
  /** Bumped by every own write, so a reload that read the file before it never swaps in older keys. */
  private writeGeneration = 0;
  private polling = false;
  private closed = false;
  /** The file check unknown keys wait for, and the one queued behind it (at most one stat in flight). */
  private fileCheck: Promise<void> | undefined;
  private nextFileCheck: Promise<void> | undefined;

  private constructor(private readonly options: FileKeyStoreOptions) {
    this.sidecarPath = sidecarPathFor(options.path);
    this.listeners = new InvalidationListeners(options.logger);
    this.expiry = fileExpiryIndex(() => this.index, Date.now(), options.watch ? marksPathFor(options.path) : undefined);
  }

  /**
   * Loads the file (missing = empty) and, with `watch`, starts watching. A corrupt file is
   * an error for one-shot use (the CLI must not show an empty list for a broken file) and,
   * for a watching gateway, an empty store with an error logged until the file is fixed.
   */
  static async open(options: FileKeyStoreOptions): Promise<FileKeyStore> {
    const store = new FileKeyStore(options);
    if (options.watch) await store.reload();
    else await store.loadStrict();
    if (options.watch) await store.startWatching();
    return store;
  }

  get path(): string {
    return this.options.path;
  }

  async findByHash(hash: string): Promise<KeyRecord | undefined> {
    let record = this.index.byHash.get(hash);
    if (record === undefined && this.options.watch && !this.closed) {
      // Unknown here: the file may have a key the watch has not told us about yet.
      await this.checkFileOnMiss();
      record = this.index.byHash.get(hash);
    }
    return record && this.withLastUsed(record);
  }

  async findById(keyId: string): Promise<KeyRecord | undefined> {
    await this.refreshLastUsed();
    const record = this.index.byId.get(keyId);
    return record && this.withLastUsed(record);
  }

  async listPage(query: KeyPageQuery): Promise<KeyPage> {
    await this.refreshLastUsed();
    const { ordered } = this.index;
    let i = query.after === undefined ? 0 : firstAfter(ordered, query.after);
    const records: KeyRecord[] = [];
    // The same budget as the Redis store: a rare match answers a short page, not a full walk.
    for (let scanned = 0; i < ordered.length && scanned < PAGE_SCAN_BUDGET + query.limit; i++, scanned++) {
      const record = ordered[i]!;
      if (!matchesPage(record, query)) continue;
      if (records.length === query.limit) return { records, next: records[records.length - 1]! };
      records.push(this.withLastUsed(record));
    }
    if (i >= ordered.length) return { records, next: null };
    return { records, next: ordered[i - 1]! };
  }

  async create(record: KeyRecord): Promise<void> {
    await this.mutate((records) => {
      if (records.some((r) => r.keyId === record.keyId)) throw new KeyConflictError(`key_id ${record.keyId} already exists`);
      if (records.some((r) => r.hash === record.hash)) throw new KeyConflictError('a key with this hash already exists');
      records.push({ ...record, agents: [...record.agents] });
      return true;
    });
  }

  async revoke(keyId: string, atIso: string): Promise<KeyRecord | undefined> {
    let result: KeyRecord | undefined;
    await this.mutate((records) => {
      const i = records.findIndex((r) => r.keyId === keyId);
      if (i < 0) return false;
      const current = records[i]!;
      if (current.revokedAt !== null) {
        result = current;
        return false;
      }
      result = { ...current, revokedAt: atIso };
      records[i] = result;
      return true;
    });
    return result && this.withLastUsed(result);
  }

  async update(keyId: string, change: KeyChange): Promise<KeyUpdate | undefined> {
    let result: KeyUpdate | undefined;
    await this.mutate((records) => {
      const i = records.findIndex((r) => r.keyId === keyId);
      if (i < 0) return false;
      const current = records[i]!;
      const update = change(current);
      // Revocation and last use are not the update's to change (see KeyStore.update).
      const record = { ...update.record, revokedAt: current.revokedAt, lastUsedAt: current.lastUsedAt };
      if (update.create) {
        const created = update.create;
        if (records.some((r) => r.keyId === created.keyId || r.hash === created.hash)) throw new KeyConflictError(`key_id ${created.keyId} already exists`);
        records.push({ ...created, agents: [...created.agents] });
      }
      records[i] = record;
      result = update.create ? { record, create: update.create } : { record };
      return true;
    });
    return result && { ...result, record: this.withLastUsed(result.record) };
  }

  async touchLastUsed(entries: readonly LastUsedEntry[]): Promise<void> {
    const updates = new Map<string, string>();
    for (const entry of entries) {
      const record = this.index.byHash.get(entry.hash);
      if (record) updates.set(record.keyId, laterIso(updates.get(record.keyId) ?? null, entry.atIso)!);
    }
    if (updates.size === 0) return;
    await withFileLock(this.sidecarPath, async () => {
      // Re-read under the lock: another gateway on this host may have flushed meanwhile.
      const merged = parseSidecar(await readTextIfExists(this.sidecarPath));
      for (const [keyId, at] of updates) merged.set(keyId, laterIso(merged.get(keyId) ?? null, at)!);
      await writeFileAtomic(this.sidecarPath, `${JSON.stringify({ version: KEY_FILE_VERSION, last_used: Object.fromEntries(merged) }, null, 2)}\n`);
      for (const [keyId, at] of merged) this.lastUsed.set(keyId, laterIso(this.lastUsed.get(keyId) ?? null, at)!);
    });
  }

  onInvalidate(listener: InvalidationListener): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.watcher?.close();
    this.watcher = undefined;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    await this.reloading;
  }

  /**
   * Re-reads the file and swaps the index. Concurrent calls coalesce into one more read.
   * A corrupt file keeps the last good index and logs an error: a bad edit must not take
   * every key down with it.
   */
  reload(): Promise<void> {
    if (this.reloading) {
      this.reloadAgain = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      do {
        this.reloadAgain = false;
        await this.reloadOnce();
      } while (this.reloadAgain && !this.closed);
    })().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async loadStrict(): Promise<void> {
    const path = this.options.path;
    this.signature = await this.statSignature();
    const [text, sidecar] = await Promise.all([readTextIfExists(path), readTextIfExists(this.sidecarPath)]);
    this.index = buildIndex(parseKeyFile(text, path), path);
    this.mergeLastUsed(parseSidecar(sidecar));
  }

  private async reloadOnce(): Promise<void> {
    const path = this.options.path;
    try {
      const generation = this.writeGeneration;
      const signature = await this.statSignature();
      const [text, sidecar] = await Promise.all([readTextIfExists(path), readTextIfExists(this.sidecarPath)]);
      // An existing but blank file is an editor's non-atomic write caught half-way (the CLI
      // writes by rename), not "no keys": the change event of the finished write reloads.
      if (text !== undefined && text.trim() === '') throw new KeyFileError(path, 'the file is empty (a write in progress?)');
      const index = buildIndex(parseKeyFile(text, path), path);
      if (generation !== this.writeGeneration) {
        // Our own write landed while we read: what we read may be older. Read again.
        this.reloadAgain = true;
        return;
      }
      this.signature = signature;
      this.mergeLastUsed(parseSidecar(sidecar));
      this.swapIndex(index);
    } catch (error) {
      this.signature = await this.statSignature().catch(() => this.signature);
      this.options.logger.error({ err: error, file: path }, 'cannot load the key file; keeping the keys loaded before');
    }
  }

  private async statSignature(): Promise<string> {
    try {
      const info = await stat(this.options.path);
      return `${info.ino}:${info.size}:${info.mtimeMs}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
      throw error;
    }
  }

  private swapIndex(next: KeyIndex): void {
    const previous = this.index;
    this.index = next;
    const changed: string[] = [];
    for (const [hash, record] of previous.byHash) {
      const now = next.byHash.get(hash);
      if (!now || authShape(now) !== authShape(record)) changed.push(hash);
    }
    for (const hash of next.byHash.keys()) if (!previous.byHash.has(hash)) changed.push(hash);
    if (changed.length === 0) return;
    // Past a few hundred changes, one "clear everything" is cheaper than many deletes.
    if (changed.length > 256) this.emit(INVALIDATE_ALL);
    else for (const hash of changed) this.emit(hash);
  }

  private emit(hash: string): void {
    this.listeners.emit(hash);
  }

  /** Read-modify-write of the key file under its lock; `change` returns false for "no write". */
  private async mutate(change: (records: KeyRecord[]) => boolean): Promise<void> {
    const path = this.options.path;
    await withFileLock(path, async () => {
      // Parse errors propagate here: never overwrite a file we could not read.
      const records = parseKeyFile(await readTextIfExists(path), path);
      if (!change(records)) return;
      const index = buildIndex(records, path);
      this.writeGeneration++;
      await writeFileAtomic(path, serializeKeyFile(records));
      this.signature = await this.statSignature().catch(() => '');
      this.swapIndex(index);
    });
  }

  private mergeLastUsed(fromSidecar: Map<string, string>): void {
    for (const [keyId, at] of fromSidecar) this.lastUsed.set(keyId, laterIso(this.lastUsed.get(keyId) ?? null, at)!);
  }

  private async refreshLastUsed(): Promise<void> {
    this.mergeLastUsed(parseSidecar(await readTextIfExists(this.sidecarPath).catch(() => undefined)));
  }

  private withLastUsed(record: KeyRecord): KeyRecord {
    const sidecar = this.lastUsed.get(record.keyId);
    if (sidecar === undefined) return record;
    const lastUsedAt = laterIso(record.lastUsedAt, sidecar);
    return lastUsedAt === record.lastUsedAt ? record : { ...record, lastUsedAt };
  }

  private async startWatching(): Promise<void> {
    const path = this.options.path;
    const directory = dirname(path);
    const name = basename(path);
    await mkdir(directory, { recursive: true });
    // Watch the directory, not the file: an atomic rename replaces the file's inode, and a
    // watch on the old inode would go silent after the first write.
    if (this.options.fsWatch !== false) this.watchDirectory(directory, name);
    // The poll catches what watch misses (network filesystems, some containers) within 1 s.
    this.pollTimer = setInterval(() => void this.poll(), this.options.pollIntervalMs ?? 250);
    this.pollTimer.unref();
  }

  private watchDirectory(directory: string, name: string): void {
    try {
      this.watcher = watch(directory, { persistent: false }, (_event, filename) => {
        if (filename === null || filename.toString() === name) void this.reload();
      });
      this.watcher.on('error', (error) => {
        this.options.logger.warn({ err: error, dir: directory }, 'key file watch failed; relying on the stat poll');
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch (error) {
      this.options.logger.warn({ err: error, dir: directory }, 'cannot watch the key file directory; relying on the stat poll');
    }
  }

  /**
   * A stat of the file that started after the caller's miss (a reload when it changed). Misses
   * while a check runs share the one queued behind it: a flood of unknown keys costs at most
   * one stat in flight, back to back, and a reload only when the file really changed.
   */
  private checkFileOnMiss(): Promise<void> {
    if (this.fileCheck === undefined) {
      this.fileCheck = this.reloadIfChanged()
        .catch(() => undefined) // the poll logs a file it cannot stat; a request just misses
        .finally(() => {
          this.fileCheck = undefined;
        });
      return this.fileCheck;
    }
    this.nextFileCheck ??= this.fileCheck.then(() => {
      this.nextFileCheck = undefined;
      return this.checkFileOnMiss();
    });
    return this.nextFileCheck;
  }

  private async reloadIfChanged(): Promise<void> {
    const signature = await this.statSignature();
    if (signature !== this.signature) await this.reload();
  }

  private async poll(): Promise<void> {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      await this.reloadIfChanged();
    } catch (error) {
      this.options.logger.warn({ err: error, file: this.options.path }, 'cannot stat the key file');
    } finally {
      this.polling = false;
    }
  }
}
