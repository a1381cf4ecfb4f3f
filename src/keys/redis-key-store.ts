// The shared key store (docs/keys.md). Every key of the store carries one hash tag, so the
// store lives in one Redis Cluster slot and its scripts and pipelines run on a cluster too
// (docs/operations.md, "Key layout"). Layout, with T = `{${prefix}keys}`:
//   T:key:${hash}           HASH  key_id account plan agents(JSON) name created_at
//                                 [expires_at] [revoked_at] [last_used_at]
//                                 [metadata(JSON)] [limits(JSON)] [replaces] [replaced_by]
//                                 [rev]: bumped by every update and revocation
//   T:keyid:${keyId}        STRING → hash
//   T:all                   SET of key ids (listing)
//   T:account:${acct}       SET of key ids (listing by account)
//   ${prefix}keys:invalidate  pub/sub channel; message = hash of a changed key. Classic
//                           PUBLISH: a cluster carries it to every node, so a subscriber
//                           on any node hears it (invalidations are rare; no sharding needed).
// Create, revoke and update are Lua scripts, so uniqueness checks, writes and the
// invalidation PUBLISH happen atomically; an update is computed from a read and written only
// if `rev` is still what was read (else read again), so concurrent writers never lose one.
// Every command is bounded by redis.command_timeout.
// Over 300 lines on purpose: one store whose layout, scripts and invalidation must agree;
// its Lua scripts already live apart (redis-key-scripts.ts).
import { InvalidationListeners } from './invalidation-listeners.js';
import { DeadlineExceededError, withDeadline } from '../deadline.js';
import type { Logger } from '../logger.js';
import type { RedisClient, RedisClientFactory } from '../redis/redis-client.js';
import { metrics } from '../metrics/metrics.js';
import type { KeyRecord } from './key-record.js';
import { fromStoredRecord } from './key-record-codec.js';
import { CREATE_SCRIPT, REVOKE_SCRIPT, TOUCH_SCRIPT, UPDATE_SCRIPT } from './redis-key-scripts.js';
import {
  INVALIDATE_ALL,
  KeyConflictError,
  StoreUnavailableError,
  type InvalidationListener,
  type KeyChange,
  type KeyListFilter,
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

/** Settings an update may write; the rest belongs to creation, revocation or last use. */
const UPDATABLE_FIELDS = ['name', 'plan', 'agents', 'expires_at', 'metadata', 'limits', 'replaces', 'replaced_by'] as const;

/** Past this many lost races in a row, an update reports the store as unavailable. */
const MAX_UPDATE_ATTEMPTS = 50;

/** After a lost race, wait a random while (growing to 50 ms) so racing writers spread out. */
function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
}

interface KeyStoreCommands {
  agentgwKeyCreate(...args: string[]): Promise<string>;
  agentgwKeyRevoke(...args: string[]): Promise<string[] | null>;
  agentgwKeyTouch(...args: string[]): Promise<number>;
  agentgwKeyUpdate(numKeys: number, ...args: string[]): Promise<string>;
}

type KeyRedis = RedisClient & KeyStoreCommands;

/** CLIENT SETNAME of the store's connections (data and subscriber). */
const CONNECTION_NAME = 'agentgw-keys';

function recordFields(record: KeyRecord): string[] {
  const fields = [
    'key_id', record.keyId,
    'account', record.account,
    'plan', record.plan,
    'agents', JSON.stringify(record.agents),
    'name', record.name,
    'created_at', record.createdAt,
  ];
  if (record.expiresAt !== null) fields.push('expires_at', record.expiresAt);
  if (record.revokedAt !== null) fields.push('revoked_at', record.revokedAt);
  if (record.lastUsedAt !== null) fields.push('last_used_at', record.lastUsedAt);
  if (Object.keys(record.metadata).length > 0) fields.push('metadata', JSON.stringify(record.metadata));
  if (record.limits !== null) fields.push('limits', JSON.stringify(record.limits));
  if (record.replaces !== null) fields.push('replaces', record.replaces);
  if (record.replacedBy !== null) fields.push('replaced_by', record.replacedBy);
  return fields;
}

/** The updatable fields as the hash stores them (absent: not stored). */
function updatableFields(record: KeyRecord): Map<string, string> {
  const all = pairsToObject(recordFields(record));
  return new Map(UPDATABLE_FIELDS.filter((f) => all[f] !== undefined).map((f) => [f, all[f]!]));
}

function pairsToObject(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) out[pairs[i]!] = pairs[i + 1]!;
  return out;
}

export class RedisKeyStore implements KeyStore {
  readonly kind = 'redis' as const;
  readonly channel: string;
  /** `{${prefix}keys}:`, the start of every key name of the store. */
  private readonly keyHead: string;
  private readonly listeners: InvalidationListeners;
  private subscriber: RedisClient | undefined;
  private closed = false;

  constructor(private readonly redis: KeyRedis, private readonly options: RedisKeyStoreOptions) {
    this.channel = `${options.prefix}keys:invalidate`;
    this.keyHead = keyStoreKeyHead(options.prefix);
    this.listeners = new InvalidationListeners(options.logger);
  }

  /** The data connection, for sharing with other Redis users (e.g. the failed-auth throttle). */
  get client(): RedisClient {
    return this.redis;
  }

  keyName(hash: string): string {
    return `${this.keyHead}key:${hash}`;
  }

  private idName(keyId: string): string {
    return `${this.keyHead}keyid:${keyId}`;
  }

  private allSetName(): string {
    return `${this.keyHead}all`;
  }

  private accountSetName(account: string): string {
    return `${this.keyHead}account:${account}`;
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

  async list(filter: KeyListFilter = {}): Promise<KeyRecord[]> {
    const setName = filter.account === undefined ? this.allSetName() : this.accountSetName(filter.account);
    return this.run('key_list', async () => {
      const ids = (await this.redis.smembers(setName)).sort();
      if (ids.length === 0) return [];
      const idPipeline = this.redis.pipeline();
      for (const id of ids) idPipeline.get(this.idName(id));
      const hashes = ((await idPipeline.exec()) ?? []).map(([error, value]) => {
        if (error) throw error;
        return value as string | null;
      });
      const present = hashes.filter((hash): hash is string => hash !== null);
      const recordPipeline = this.redis.pipeline();
      for (const hash of present) recordPipeline.hgetall(this.keyName(hash));
      const results = (await recordPipeline.exec()) ?? [];
      const records: KeyRecord[] = [];
      results.forEach(([error, fields], i) => {
        if (error) throw error;
        const record = this.decode(present[i]!, fields as Record<string, string>);
        if (record && (filter.account === undefined || record.account === filter.account)) records.push(record);
      });
      return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.keyId.localeCompare(b.keyId));
    });
  }

  async create(record: KeyRecord): Promise<void> {
    const result = await this.run('key_create', () =>
      this.redis.agentgwKeyCreate(
        this.keyName(record.hash),
        this.idName(record.keyId),
        this.accountSetName(record.account),
        this.allSetName(),
        record.hash,
        record.keyId,
        this.channel,
        ...recordFields(record),
      ),
    );
    if (result === 'hash_exists') throw new KeyConflictError('a key with this hash already exists');
    if (result === 'id_exists') throw new KeyConflictError(`key_id ${record.keyId} already exists`);
  }

  async revoke(keyId: string, atIso: string): Promise<KeyRecord | undefined> {
    const hash = await this.run('key_revoke', () => this.redis.get(this.idName(keyId)));
    if (hash === null) return undefined;
    const pairs = await this.run('key_revoke', () => this.redis.agentgwKeyRevoke(this.keyName(hash), atIso, this.channel, hash));
    return pairs ? this.decode(hash, pairsToObject(pairs)) : undefined;
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
      const deletes = [...before.keys()].filter((field) => !after.has(field));
      const args = [fields.rev ?? '0', this.channel, hash, String(sets.length / 2), ...sets, String(deletes.length), ...deletes];
      const keys = [this.keyName(hash)];
      if (update.create) {
        const created = update.create;
        keys.push(this.keyName(created.hash), this.idName(created.keyId), this.accountSetName(created.account), this.allSetName());
        args.push(created.hash, created.keyId, ...recordFields(created));
      }
      const result = await this.run('key_update', () => this.redis.agentgwKeyUpdate(keys.length, ...keys, ...args));
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
      const pipeline = this.redis.pipeline() as ReturnType<RedisClient['pipeline']> & { agentgwKeyTouch(key: string, atIso: string): unknown };
      for (const entry of entries) pipeline.agentgwKeyTouch(this.keyName(entry.hash), entry.atIso);
      for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
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

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([quietly(this.subscriber), quietly(this.redis)]);
  }
}

async function quietly(client: RedisClient | undefined): Promise<void> {
  if (!client || client.status === 'end') return;
  try {
    if (client.status === 'ready') await client.quit();
    else client.disconnect();
  } catch {
    client.disconnect();
  }
}

/** The hash tag and separator every key of the store starts with (docs/keys.md). */
export function keyStoreKeyHead(prefix: string): string {
  return `{${prefix}keys}:`;
}

export async function createRedisKeyStore(options: RedisKeyStoreOptions): Promise<RedisKeyStore> {
  const redis = options.redis.connect('key-store', CONNECTION_NAME) as KeyRedis;
  redis.defineCommand('agentgwKeyCreate', { numberOfKeys: 4, lua: CREATE_SCRIPT });
  redis.defineCommand('agentgwKeyRevoke', { numberOfKeys: 1, lua: REVOKE_SCRIPT });
  redis.defineCommand('agentgwKeyTouch', { numberOfKeys: 1, lua: TOUCH_SCRIPT });
  // The number of keys varies (1, or 5 with a rotation), so it is the first argument.
  redis.defineCommand('agentgwKeyUpdate', { lua: UPDATE_SCRIPT });
  const store = new RedisKeyStore(redis, options);
  if (options.waitForConnectionMs !== undefined) {
    try {
      await options.redis.whenReady(redis, options.waitForConnectionMs);
    } catch (error) {
      redis.disconnect();
      throw new StoreUnavailableError((error as Error).message, { cause: error });
    }
  }
  if (options.subscribe) await store.startSubscriber();
  return store;
}
