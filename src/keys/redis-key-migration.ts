// Builds the listing indexes (redis-key-index.ts) for keys written by the layout before them,
// whose only listing was the SETs T:all and T:account:${account}. Runs in a gateway's
// background while it serves: SSCAN over T:all in batches (never KEYS), each key indexed by a
// script that checks the record is still at the rev it was read at and then takes the key off
// the old sets. Idempotent (index writes are ZADDs of the same members) and resumable (what
// is left to do is exactly what T:all still holds; Redis drops the set when it empties), so a
// restart, or several gateways at once, simply carry on. New writes never touch the old sets.
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/redis-client.js';
import type { KeyRecord } from './key-record.js';
import { queueOperation } from '../redis/redis-operation.js';
import { indexEntries, indexFields, indexOps, type KeyIndexNames } from './redis-key-index.js';
import { KEY_MIGRATE, type MigrateKeyRequest } from './redis-key-operations.js';

export interface MigrationOptions {
  /** With the store's operations defined (redis-key-operations.ts). */
  redis: RedisClient;
  indexes: KeyIndexNames;
  logger: Logger;
  closed: () => boolean;
  decode: (hash: string, fields: Record<string, string>) => KeyRecord | undefined;
}

/** Keys per SSCAN batch: small enough that serving traffic interleaves between batches. */
const BATCH = 500;
/** Passes over the old set; a key changed between its read and its script in each is left for the next start. */
const MAX_PASSES = 5;

export async function migrateKeyIndexes(options: MigrationOptions): Promise<void> {
  const { redis, indexes, logger } = options;
  const legacyAll = `${indexes.head}all`;
  try {
    const total = await redis.scard(legacyAll);
    if (total === 0) return;
    logger.info({ keys: total }, 'key store: building the listing indexes for keys of the earlier layout (once; the gateway serves meanwhile)');
    const startedAt = Date.now();
    let migrated = 0;
    // A key that changed between its read and its script stays in the old set; the next
    // pass reads it again.
    for (let pass = 0; pass < MAX_PASSES && (await redis.scard(legacyAll)) > 0; pass++) {
      let cursor = '0';
      do {
        if (options.closed()) return;
        const [next, ids] = await redis.sscan(legacyAll, cursor, 'COUNT', BATCH);
        cursor = next;
        migrated += await migrateBatch(options, legacyAll, ids);
        // Let requests run between batches.
        await new Promise((resolve) => setImmediate(resolve));
      } while (cursor !== '0');
    }
    const left = await redis.scard(legacyAll);
    logger.info({ keys: migrated, left, ms: Date.now() - startedAt }, left === 0 ? 'key store: listing indexes built' : 'key store: listing indexes built but for keys that kept changing; the next start takes them');
  } catch (error) {
    if (!options.closed()) logger.error({ err: error }, 'key store: building the listing indexes failed; the next start resumes it');
  }
}

/** Three pipelined round trips per batch: the ids' hashes, the records, one script per record. */
async function migrateBatch(options: MigrationOptions, legacyAll: string, ids: string[]): Promise<number> {
  const { redis, indexes } = options;
  if (ids.length === 0) return 0;
  const hashes = await exec<string | null>(redis, ids.map((id) => ['get', `${indexes.head}keyid:${id}`]));
  const present = ids.flatMap((id, i) => (hashes[i] === null ? [] : [{ id, hash: hashes[i]! }]));
  const records = await exec<Record<string, string>>(redis, present.map(({ hash }) => ['hgetall', `${indexes.head}key:${hash}`]));
  const writes = redis.pipeline();
  // Gone or malformed (decode logged it): nothing to list; take it off the old set.
  for (const [i, id] of ids.entries()) if (hashes[i] === null) writes.srem(legacyAll, id);
  const migrations: MigrateKeyRequest[] = [];
  present.forEach(({ id, hash }, i) => {
    const fields = records[i]!;
    const record = options.decode(hash, fields);
    if (!record) {
      writes.srem(legacyAll, id);
      return;
    }
    migrations.push({
      recordKey: `${indexes.head}key:${hash}`,
      rev: fields.rev ?? '0',
      legacyAll,
      legacyAccount: `${indexes.head}account:${record.account}`,
      keyId: id,
      fields: indexFields(record),
      indexOps: indexOps(indexEntries(indexes, record)),
    });
  });
  // The migrations last, so their replies are the pipeline's last ones.
  for (const migration of migrations) queueOperation(writes, KEY_MIGRATE, migration);
  const results = (await writes.exec()) ?? [];
  const firstMigration = results.length - migrations.length;
  let done = 0;
  for (const [i, [error, reply]] of results.entries()) {
    if (error) throw error;
    if (i >= firstMigration && KEY_MIGRATE.decode(reply, migrations[i - firstMigration]!) !== 'conflict') done++;
  }
  return done;
}

async function exec<T>(redis: RedisClient, commands: string[][]): Promise<T[]> {
  if (commands.length === 0) return [];
  const results = (await redis.pipeline(commands).exec()) ?? [];
  return results.map(([error, value]) => {
    if (error) throw error;
    return value as T;
  });
}
