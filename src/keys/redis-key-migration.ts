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
import { indexEntries, indexFields, indexOps, type KeyIndexNames } from './redis-key-index.js';

export interface MigrateCommands {
  agentgwKeyMigrate(...args: string[]): Promise<string>;
}

export interface MigrationOptions {
  redis: RedisClient & MigrateCommands;
  indexes: KeyIndexNames;
  logger: Logger;
  closed: () => boolean;
  decode: (hash: string, fields: Record<string, string>) => KeyRecord | undefined;
}

/** Keys per SSCAN batch: small enough that serving traffic interleaves between batches. */
const BATCH = 500;
/** A key changed between its read and its script this many times in a row is left for the next start. */
const MAX_ATTEMPTS = 5;

export async function migrateKeyIndexes(options: MigrationOptions): Promise<void> {
  const { redis, indexes, logger } = options;
  const legacyAll = `${indexes.head}all`;
  try {
    const total = await redis.scard(legacyAll);
    if (total === 0) return;
    logger.info({ keys: total }, 'key store: building the listing indexes for keys of the earlier layout (once; the gateway serves meanwhile)');
    const startedAt = Date.now();
    let migrated = 0;
    let cursor = '0';
    do {
      if (options.closed()) return;
      const [next, ids] = await redis.sscan(legacyAll, cursor, 'COUNT', BATCH);
      cursor = next;
      migrated += await migrateBatch(options, legacyAll, ids);
      // Let requests run between batches.
      await new Promise((resolve) => setImmediate(resolve));
    } while (cursor !== '0');
    const left = await redis.scard(legacyAll);
    logger.info({ keys: migrated, left, ms: Date.now() - startedAt }, left === 0 ? 'key store: listing indexes built' : 'key store: listing indexes built but for keys that kept changing; the next start takes them');
  } catch (error) {
    if (!options.closed()) logger.error({ err: error }, 'key store: building the listing indexes failed; the next start resumes it');
  }
}

async function migrateBatch(options: MigrationOptions, legacyAll: string, ids: string[]): Promise<number> {
  const { redis, indexes } = options;
  let done = 0;
  for (const id of ids) {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const hash = await redis.get(`${indexes.head}keyid:${id}`);
      if (hash === null) {
        await redis.srem(legacyAll, id);
        break;
      }
      const recordKey = `${indexes.head}key:${hash}`;
      const fields = await redis.hgetall(recordKey);
      const record = options.decode(hash, fields);
      if (!record) {
        // Malformed (decode logged it) or gone: nothing to list; leave it off the old set.
        await redis.srem(legacyAll, id);
        break;
      }
      const set = indexFields(record);
      const args = [fields.rev ?? '0', legacyAll, `${indexes.head}account:${record.account}`, id, String(set.length / 2), ...set, ...indexOps(indexEntries(indexes, record))];
      const result = await redis.agentgwKeyMigrate(recordKey, ...args);
      if (result !== 'conflict') {
        done++;
        break;
      }
    }
  }
  return done;
}
