// What an idle webhook deliverer costs Redis (docs/decisions/0075-idle-webhook-delivery.md):
// starts a redis-server of its own on a free port, opens the notifications of one gateway with
// a webhook configured (it takes all 16 outbox shards), lets it settle, then counts with
// MONITOR every command the gateway's connection sends during a window with no events:
// commands a script runs inside Redis (source "lua") are not counted, they are part of the
// script's one command. Prints the counts per command, per second, and the bursts (commands
// less than 10 ms apart: about one round trip each).
//   npm run build && node scripts/webhook-idle-commands.mjs [seconds=60] [settle-seconds=3]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { parseConfig } from '../dist/config/load-config.js';
import { openNotifications } from '../dist/notifications/open-notifications.js';
import { createRedisClientFactory } from '../dist/redis/redis-client.js';
import { startBenchRedis } from '../bench/lib/bench-redis.mjs';

const [secondsText = '60', settleText = '3'] = process.argv.slice(2);
const seconds = Number(secondsText);
const BURST_GAP_S = 0.01;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const dir = await mkdtemp(join(tmpdir(), 'agentgw-idle-'));
// A server of its own even where REDIS_URL names a shared one: MONITOR counts every client's commands.
delete process.env.REDIS_URL;
const server = await startBenchRedis({ tmpDir: dir, fdLimit: 1_024 });
const { url } = server;

const config = parseConfig({ redis: { url }, agents: { demo: { upstream: 'http://127.0.0.1:9/api/v1' } }, notifications: { webhooks: [{ url: 'http://127.0.0.1:9/hook', secret: 'idle-commands-secret-0123456789' }], dir } }, 'bench', {});
const logger = pino({ level: 'warn' });
// The connection the gateway gives its outbox (src/gateway.ts): the same factory, the same use.
const redis = createRedisClientFactory(config.redis, logger).connect('webhooks', 'agentgw-webhooks');
const notifications = await openNotifications(config.notifications, { redis, redisPrefix: config.redis.prefix, logger, clock: { now: () => Date.now() } });
await sleep(Number(settleText) * 1000);

const watcher = new Redis(url);
const monitor = await watcher.monitor();
const counts = {};
let total = 0;
let bursts = 0;
let last = -Infinity;
monitor.on('monitor', (time, args, source) => {
  if (source === 'lua') return;
  const at = Number(time);
  if (at - last > BURST_GAP_S) bursts++;
  last = at;
  total++;
  const name = String(args[0]).toLowerCase();
  counts[name] = (counts[name] ?? 0) + 1;
});
await sleep(seconds * 1000);
monitor.disconnect();
watcher.disconnect();
console.log(JSON.stringify({ seconds, total, per_second: +(total / seconds).toFixed(2), bursts, bursts_per_second: +(bursts / seconds).toFixed(2), counts }));
await notifications.close();
redis.disconnect();
await server.close();
await rm(dir, { recursive: true, force: true });
