// The shared key store (docs/keys.md). Every key of the store carries one hash tag, so the
// store lives in one Redis Cluster slot and its scripts and pipelines run on a cluster too
// (docs/operations.md, "Key layout"). Layout, with T = `{${prefix}keys}`:
//   T:key:${hash}           HASH  key_id account plan agents(JSON) name created_at
//                                 [expires_at] [revoked_at] [last_used_at]
//                                 [metadata(JSON)] [limits(JSON)] [tools(JSON)] [replaces] [replaced_by]
//                                 [rev]: bumped by every update and revocation
//                                 ix name_lc: its index member and lowercased name
//   T:keyid:${keyId}        STRING → hash
//   T:ix:…                  the listing indexes (redis-key-index.ts); the layout before them
//                           (SETs T:all, T:account:${acct}) is migrated at start
//                           (redis-key-migration.ts)
//   ${prefix}keys:invalidate  pub/sub channel; message = hash of a changed key. Classic
//                           PUBLISH: a cluster carries it to every node, so a subscriber
//                           on any node hears it (invalidations are rare; no sharding needed).
// Create, revoke and update are Lua scripts, so uniqueness checks, writes and the
// invalidation PUBLISH happen atomically; an update is computed from a read and written only
// if `rev` is still what was read (else read again), so concurrent writers never lose one.
// Every command is bounded by redis.command_timeout. The scripts (redis-key-scripts.ts, as
// typed, versioned operations in redis-key-operations.ts), the record's fields
// (redis-key-fields.ts) and the pages (redis-key-pages.ts) live apart. One file over 300
// lines because what is left is the KeyStore interface over one connection pair: each method
// is the few commands of one store operation under the store's deadline and error counting
// (run), and the subscriber, migration and sweep share the store's closed state.
import { InvalidationListeners } from './invalidation-listeners.js';
import { DeadlineExceededError, withDeadline } from '../deadline.js';
import type { Logger } from '../logger.js';
import { closeQuietly } from '../redis/close-quietly.js';
import type { RedisClient, RedisClientFactory } from '../redis/redis-client.js';
import { metrics } from '../metrics/metrics.js';
import type { KeyRecord } from './key-record.js';
import { fromStoredRecord } from './key-record-codec.js';
import { callOperation, defineOperation, queueOperation } from '../redis/redis-operation.js';
import { KEY_CREATE, KEY_OPERATIONS, KEY_REVOKE, KEY_TOUCH, KEY_UPDATE } from './redis-key-operations.js';
import { indexEntries, indexFields, indexOps, KeyIndexNames, possibleEntries } from './redis-key-index.js';
import { pairsToObject, recordFields, updatableFields } from './redis-key-fields.js';
import { readKeyPage, sweepExpired } from './redis-key-pages.js';
import { migrateKeyIndexes } from './redis-key-migration.js';
import { redisExpiryIndex } from './redis-key-expiry.js';
import {
  INVALIDATE_ALL,
  KeyConflictError,
  StoreUnavailableError,
  type InvalidationListener,
  type KeyChange,
  type KeyExpiryIndex,
  type KeyPage,
  type KeyPageQuery,
  type KeyStore,
  type KeyUpdate,
  type LastUsedEntry,
} from './key-store.js';

export interface RedisKeyStoreOptions {
  /** Opens the store's connections: the data connection, and the subscriber when `subscribe`. */
  redis: RedisClientFactory;
  prefix: string;
  commandTimeoutMs: number;
  logger: Logger;
  /** Open a subscriber connection for invalidations (gateways); off for one-shot CLI use. */
  subscribe: boolean;
  /**
   * Wait (up to this long) for the first connection and fail if Redis cannot be reached:
   * for the CLI. A gateway leaves it unset and starts even while Redis is down.
   */
  waitForConnectionMs?: number;
}


/** Past this many lost races in a row, an update reports the store as unavailable. */
const MAX_UPDATE_ATTEMPTS = 50;

/** After a lost race, wait a random while (growing to 50 ms) so racing writers spread out. */
function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
}

/** The store's data connection, with its operations defined (redis-key-operations.ts). */
type KeyRedis = RedisClient;

/** CLIENT SETNAME of the store's connections (data and subscriber). */
const CONNECTION_NAME = 'agentgw-keys';




export class RedisKeyStore implements KeyStore {
  readonly kind = 'redis' as const;
  readonly channel: string;
  /** `{${prefix}keys}:`, the start of every key name of the store. */
  private readonly keyHead: string;
  readonly indexes: KeyIndexNames;
  readonly expiry: KeyExpiryIndex;
  private readonly listeners: InvalidationListeners;
  private migration: Promise<void> | undefined;
  private draining: Promise<void> | undefined;
  private subscriber: RedisClient | undefined;
  private closed = false;

  constructor(private readonly redis: KeyRedis, private readonly options: RedisKeyStoreOptions) {
    this.channel = `${options.prefix}keys:invalidate`;
    this.keyHead = keyStoreKeyHead(options.prefix);
    this.indexes = new KeyIndexNames(this.keyHead);
    this.expiry = redisExpiryIndex(redis, this.indexes, (op, work) => this.run(op, work));
    this.listeners = new InvalidationListeners(options.logger);
  }

  /** The data connection, for sharing with other Redis users (e.g. the failed-auth throttle). */
  get client(): RedisClient {
    return this.redis;
  }

  keyName(hash: string): string {
    return `${this.keyHead}key:${hash}`;
  }

  idName(keyId: string): string {
    return `${this.keyHead}keyid:${keyId}`;
  }

  /** Runs one Redis operation; any failure becomes StoreUnavailableError and is counted. */
  private async run<T>(op: string, work: () => Promise<T>): Promise<T> {
    try {
      return await withDeadline(work(), this.options.commandTimeoutMs, () => new DeadlineExceededError(this.options.commandTimeoutMs, op));
    } catch (error) {
      metrics.redisErrors.labels(op).inc();
      throw new StoreUnavailableError(`key store (redis) ${op} failed: ${(error as Error).message}`, { cause: error });
    }
  }

  private decode(hash: string, fields: Record<string, string>): KeyRecord | undefined {
    if (Object.keys(fields).length === 0) return undefined;
    try {
      return fromStoredRecord({
        ...fields,
        hash,
        agents: JSON.parse(fields.agents ?? 'null'),
        metadata: fields.metadata === undefined ? undefined : JSON.parse(fields.metadata),
        limits: fields.limits === undefined ? undefined : JSON.parse(fields.limits),
        tools: fields.tools === undefined ? undefined : JSON.parse(fields.tools),
        mcp: fields.mcp === undefined ? undefined : JSON.parse(fields.mcp),
      });
    } catch (error) {
      this.options.logger.error({ err: error, keyId: fields.key_id }, 'malformed key record in redis; treating it as absent');
      return undefined;
    }
  }

  async findByHash(hash: string): Promise<KeyRecord | undefined> {
    const startedAt = performance.now();
    const fields = await this.run('key_lookup', () => this.redis.hgetall(this.keyName(hash)));
    metrics.redisCommandDuration.labels('key_lookup').observe((performance.now() - startedAt) / 1000);
    return this.decode(hash, fields);
  }

  async findById(keyId: string): Promise<KeyRecord | undefined> {
    const hash = await this.run('key_get', () => this.redis.get(this.idName(keyId)));
    if (hash === null) return undefined;
    return this.decode(hash, await this.run('key_get', () => this.redis.hgetall(this.keyName(hash))));
  }

  async listPage(query: KeyPageQuery): Promise<KeyPage> {
    const { moreDue, ...page } = await this.run('key_list', () => readKeyPage(this.redis, this.indexes, query, (hash, fields) => this.decode(hash, fields)));
    if (moreDue) this.drainExpired(query.nowMs);
    return page;
  }

  async create(record: KeyRecord): Promise<void> {
    const outcome = await this.run('key_create', () =>
      callOperation(this.redis, KEY_CREATE, {
        recordKey: this.keyName(record.hash),
        idKey: this.idName(record.keyId),
        hash: record.hash,
        keyId: record.keyId,
        channel: this.channel,
        fields: [...recordFields(record), ...indexFields(record)],
        indexOps: indexOps(indexEntries(this.indexes, record)),
      }),
    );
    if (outcome === 'hash_exists') throw new KeyConflictError('a key with this hash already exists');
    if (outcome === 'id_exists') throw new KeyConflictError(`key_id ${record.keyId} already exists`);
  }

  async revoke(keyId: string, atIso: string): Promise<KeyRecord | undefined> {
    const hash = await this.run('key_revoke', () => this.redis.get(this.idName(keyId)));
    if (hash === null) return undefined;
    const revoked = await this.run('key_revoke', () => callOperation(this.redis, KEY_REVOKE, { recordKey: this.keyName(hash), atIso, channel: this.channel, hash, keyHead: this.keyHead }));
    return revoked.outcome === 'revoked' ? this.decode(hash, pairsToObject(revoked.fields)) : undefined;
  }

  async update(keyId: string, change: KeyChange): Promise<KeyUpdate | undefined> {
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      const hash = await this.run('key_update', () => this.redis.get(this.idName(keyId)));
      if (hash === null) return undefined;
      const fields = await this.run('key_update', () => this.redis.hgetall(this.keyName(hash)));
      const current = this.decode(hash, fields);
      if (!current) return undefined;
      const update = change(current);
      const before = updatableFields(current);
      const after = updatableFields(update.record);
      const sets: string[] = [];
      for (const [field, value] of after) if (before.get(field) !== value) sets.push(field, value);
      // The indexes follow the record: ix and name_lc are rewritten with it, its entries move.
      sets.push(...indexFields(update.record));
      const deletes = [...before.keys()].filter((field) => !after.has(field));
      const adds = indexEntries(this.indexes, { ...update.record, revokedAt: current.revokedAt });
      if (update.create) adds.push(...indexEntries(this.indexes, update.create));
      const created = update.create;
      const request = {
        recordKey: this.keyName(hash),
        rev: fields.rev ?? '0',
        channel: this.channel,
        hash,
        sets,
        deletes,
        indexOps: indexOps(adds, possibleEntries(this.indexes, current)),
        ...(created && { create: { recordKey: this.keyName(created.hash), idKey: this.idName(created.keyId), hash: created.hash, keyId: created.keyId, fields: [...recordFields(created), ...indexFields(created)] } }),
      };
      const result = await this.run('key_update', () => callOperation(this.redis, KEY_UPDATE, request));
      if (result === 'conflict') {
        await backoff(attempt);
        continue;
      }
      if (result === 'gone') return undefined;
      if (result === 'hash_exists') throw new KeyConflictError('a key with this hash already exists');
      if (result === 'id_exists') throw new KeyConflictError(`key_id ${update.create!.keyId} already exists`);
      const record = { ...update.record, revokedAt: current.revokedAt, lastUsedAt: current.lastUsedAt };
      return update.create ? { record, create: update.create } : { record };
    }
    throw new StoreUnavailableError(`key store (redis) update of ${keyId} lost ${MAX_UPDATE_ATTEMPTS} races in a row to other writers`);
  }

  async touchLastUsed(entries: readonly LastUsedEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.run('key_touch', async () => {
      const pipeline = this.redis.pipeline();
      const requests = entries.map((entry) => ({ recordKey: this.keyName(entry.hash), atIso: entry.atIso }));
      for (const request of requests) queueOperation(pipeline, KEY_TOUCH, request);
      for (const [i, [error, reply]] of ((await pipeline.exec()) ?? []).entries()) {
        if (error) throw error;
        KEY_TOUCH.decode(reply, requests[i]!);
      }
    });
  }

  onInvalidate(listener: InvalidationListener): () => void {
    return this.listeners.add(listener);
  }

  private emit(hash: string): void {
    this.listeners.emit(hash);
  }

  /**
   * Starts the subscriber connection; every (re)connect clears caches, since messages may
   * have been missed. Resolves once the first subscription is in place (or after
   * `waitMs`, so an unreachable Redis does not hold up a gateway's start): lookups made
   * before then would otherwise be cached and then cleared by that first subscription.
   */
  startSubscriber(waitMs = 2_000): Promise<void> {
    const subscriber = this.options.redis.connect('subscriber', CONNECTION_NAME);
    this.subscriber = subscriber;
    let firstSubscribed!: () => void;
    const subscribed = new Promise<void>((resolve) => (firstSubscribed = resolve));
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.emit(message);
    });
    subscriber.on('ready', () => {
      subscriber.subscribe(this.channel).then(
        () => {
          this.emit(INVALIDATE_ALL);
          firstSubscribed();
        },
        (error: unknown) => {
          if (!this.closed) this.options.logger.warn({ err: error }, 'cannot subscribe to key invalidations');
        },
      );
    });
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    return Promise.race([subscribed, gaveUp]).finally(() => clearTimeout(timer));
  }

  /**
   * Builds the indexes of keys written by the layout before them, in the background while
   * the gateway serves (redis-key-migration.ts). Resolves when done (or failed: logged).
   */
  startIndexMigration(): Promise<void> {
    this.migration ??= migrateKeyIndexes({
      redis: this.redis,
      indexes: this.indexes,
      logger: this.options.logger,
      closed: () => this.closed,
      decode: (hash, fields) => this.decode(hash, fields),
    });
    return this.migration;
  }

  /**
   * Moves the keys due by `nowMs` to status:expired, a batch at a time with the event loop
   * free between batches, once a page's own sweep found more than one batch due (a bulk
   * expiry, or right after a migration). Nothing runs while nothing is due: an idle
   * gateway sends no sweeps.
   */
  private drainExpired(nowMs: number): void {
    this.draining ??= (async () => {
      try {
        while (!this.closed && (await this.run('key_sweep', () => sweepExpired(this.redis, this.indexes, nowMs)))) {
          await new Promise((resolve) => setImmediate(resolve));
        }
      } catch {
        // Counted by run(); the next status page sweeps again.
      } finally {
        this.draining = undefined;
      }
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.migration, this.draining]);
    await Promise.all([closeQuietly(this.subscriber), closeQuietly(this.redis)]);
  }
}

/** The hash tag and separator every key of the store starts with (docs/keys.md). */
export function keyStoreKeyHead(prefix: string): string {
  return `{${prefix}keys}:`;
}

export async function createRedisKeyStore(options: RedisKeyStoreOptions): Promise<RedisKeyStore> {
  const redis = options.redis.connect('key-store', CONNECTION_NAME) as KeyRedis;
  // The page and sweep scripts' one declared key only routes the call to the store's slot (a
  // Cluster node runs a script only where its declared keys live); the keys they touch are
  // built from ARGV.
  for (const operation of KEY_OPERATIONS) defineOperation(redis, operation);
  const store = new RedisKeyStore(redis, options);
  if (options.waitForConnectionMs !== undefined) {
    try {
      await options.redis.whenReady(redis, options.waitForConnectionMs);
    } catch (error) {
      redis.disconnect();
      throw new StoreUnavailableError((error as Error).message, { cause: error });
    }
  }
  if (options.subscribe) {
    await store.startSubscriber();
    // Gateways (the subscribing users) migrate; one-shot CLI use does not.
    void store.startIndexMigration();
  }
  return store;
}
