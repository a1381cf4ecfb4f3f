// The notifier of one `keys` CLI write (docs/notifications-events.md, "Key events"): the CLI
// publishes the same key events as the admin API, into the same outbox, and leaves delivery to
// the running gateways. In Redis mode it appends to the outbox streams; in embedded mode the
// outbox file belongs to the gateway process, so it drops the events into the outbox's inbox
// (src/notifications/file-outbox-inbox.ts), which the gateway takes in within a doorbell
// period, or at its next start. close() writes what was published, then ends the connection.
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import { silentLogger } from '../logger.js';
import { BufferedNotifier } from '../notifications/buffered-notifier.js';
import { dropIntoInbox } from '../notifications/file-outbox-inbox.js';
import { openNotifications, wantedByAny } from '../notifications/open-notifications.js';
import { NO_NOTIFIER, type Notifier } from '../notifications/notifier.js';
import { createRedisClientFactory } from '../redis/redis-client.js';

export interface CliNotifications {
  notifier: Notifier;
  close(): Promise<void>;
}

export async function openCliNotifications(config: GatewayConfig, clock: Clock): Promise<CliNotifications> {
  const { notifications } = config;
  if (notifications.webhooks.length === 0) return { notifier: NO_NOTIFIER, close: async () => {} };
  if (!config.redis) {
    const notifier = new BufferedNotifier({
      // Key events carry no dedupe key, so there is nothing to claim across processes.
      outbox: { append: (events) => dropIntoInbox(notifications.dir, events), claimOnce: () => Promise.resolve(true) },
      clock,
      logger: silentLogger,
      maxQueue: notifications.maxQueue,
      wants: wantedByAny(notifications),
    });
    return { notifier, close: () => notifier.close() };
  }
  const factory = createRedisClientFactory(config.redis, silentLogger);
  const redis = factory.connect('cli-read', 'agentgw-cli-webhooks');
  try {
    await factory.whenReady(redis, 5_000);
    const opened = await openNotifications(notifications, { redis, redisPrefix: config.redis.prefix, logger: silentLogger, clock, deliver: false });
    return {
      notifier: opened.notifier,
      async close() {
        await opened.close();
        redis.disconnect();
      },
    };
  } catch (error) {
    redis.disconnect();
    throw error;
  }
}
