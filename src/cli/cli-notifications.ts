// The notifier of one `keys` CLI write (docs/notifications-events.md, "Key events"): in Redis
// mode the CLI publishes the same key events as the admin API into the same outbox streams and
// leaves delivery to the running gateways; close() writes what was published, then ends the
// connection. In embedded mode the outbox file belongs to the one gateway process that runs
// it (file-webhook-outbox.ts), so a CLI write there publishes nothing.
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import { silentLogger } from '../logger.js';
import { openNotifications } from '../notifications/open-notifications.js';
import { NO_NOTIFIER, type Notifier } from '../notifications/notifier.js';
import { createRedisClientFactory } from '../redis/redis-client.js';

export interface CliNotifications {
  notifier: Notifier;
  close(): Promise<void>;
}

export async function openCliNotifications(config: GatewayConfig, clock: Clock): Promise<CliNotifications> {
  if (config.notifications.webhooks.length === 0 || !config.redis) return { notifier: NO_NOTIFIER, close: async () => {} };
  const factory = createRedisClientFactory(config.redis, silentLogger);
  const redis = factory.connect('cli-read', 'agentgw-cli-webhooks');
  try {
    await factory.whenReady(redis, 5_000);
    const notifications = await openNotifications(config.notifications, { redis, redisPrefix: config.redis.prefix, logger: silentLogger, clock, deliver: false });
    return {
      notifier: notifications.notifier,
      async close() {
        await notifications.close();
        redis.disconnect();
      },
    };
  } catch (error) {
    redis.disconnect();
    throw error;
  }
}
