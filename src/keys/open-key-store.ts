// Chooses the key store named by config.keys.store. The Redis store is loaded only when
// configured, and opens its connections through the factory the caller passes in.
import type { GatewayConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import type { RedisClientFactory } from '../redis/redis-client.js';
import { FileKeyStore } from './file-key-store.js';
import type { KeyStore } from './key-store.js';

export interface OpenKeyStoreOptions {
  logger: Logger;
  /** Follow changes made elsewhere (file watch / Redis pub/sub): gateways yes, the CLI no. */
  subscribe: boolean;
  /** Fail unless Redis answers within this long (the CLI); a gateway starts regardless. */
  waitForConnectionMs?: number;
  /** Opens the Redis store's connections; required when keys.store is "redis". */
  redis: RedisClientFactory | undefined;
}

export async function openKeyStore(config: GatewayConfig, options: OpenKeyStoreOptions): Promise<KeyStore> {
  if (config.keys.store === 'redis') {
    if (!config.redis) throw new Error('keys.store is "redis" but the config has no redis block');
    if (!options.redis) throw new Error('keys.store is "redis" but no Redis client factory was given to openKeyStore');
    const { createRedisKeyStore } = await import('./redis-key-store.js');
    return createRedisKeyStore({
      redis: options.redis,
      prefix: config.redis.prefix,
      commandTimeoutMs: config.redis.commandTimeoutMs,
      logger: options.logger,
      subscribe: options.subscribe,
      waitForConnectionMs: options.waitForConnectionMs,
    });
  }
  return FileKeyStore.open({ path: config.keys.file, logger: options.logger, watch: options.subscribe });
}
