// Memory under a receiver that never answers (docs/decisions/0067-webhook-outbox-and-delivery.md):
// publishes N events (default 10,000) to a webhook whose server accepts connections and never
// writes a byte, lets delivery run for a while, and prints the heap before and after (after a
// full GC each time), the sockets the receiver holds and the outbox depth.
//   npm run build && node --expose-gc scripts/webhook-black-hole.mjs [embedded|redis] [events] [seconds]
// Redis mode uses REDIS_URL (default redis://127.0.0.1:6379) under a throwaway prefix it deletes.
import { createServer } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { parseConfig } from '../dist/config/load-config.js';
import { openNotifications } from '../dist/notifications/open-notifications.js';
import { metrics, registry } from '../dist/metrics/metrics.js';

const [mode = 'embedded', eventsText = '10000', secondsText = '30'] = process.argv.slice(2);
const events = Number(eventsText);
const seconds = Number(secondsText);
if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');

const sockets = new Set();
const hole = createServer((socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => {});
  // Read and ignore: a paused socket would never notice the gateway closing it.
  socket.resume();
});
await new Promise((resolve) => hole.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${hole.address().port}/hook`;
const dir = await mkdtemp(join(tmpdir(), 'agentgw-blackhole-'));
const prefix = `bh${process.pid}:`;
const config = parseConfig({ agents: { demo: { upstream: 'http://127.0.0.1:9/api/v1' } }, notifications: { webhooks: [{ url, secret: 'black-hole-secret-0123456789' }], dir } }, 'bench', {});
const redis = mode === 'redis' ? new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') : undefined;
const logger = pino({ level: 'warn' });
const heapMiB = () => {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed / 1_048_576;
};

const notifications = await openNotifications(config.notifications, { redis, redisPrefix: prefix, logger, clock: { now: () => Date.now() } });
await new Promise((resolve) => setTimeout(resolve, 2_000));
const before = heapMiB();
for (let i = 0; i < events; i++) notifications.notifier.publish('key.created', `key:key_${i}`, { key_id: `key_${i}`, account: 'acme', plan: 'scale', seq: i });
const started = Date.now();
let peak = before;
while (Date.now() - started < seconds * 1000) {
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  peak = Math.max(peak, process.memoryUsage().heapUsed / 1_048_576);
}
const after = heapMiB();
const depth = (await registry.getSingleMetric('agentgw_webhook_outbox_depth').get()).values[0]?.value;
const retried = (await metrics.webhookDeliveries.get()).values.find((v) => v.labels.result === 'retried')?.value ?? 0;
console.log(JSON.stringify({ mode, events, seconds, heap_before_mib: +before.toFixed(1), heap_after_mib: +after.toFixed(1), heap_peak_mib: +peak.toFixed(1), receiver_sockets: sockets.size, outbox_depth: depth, retried, rss_mib: +(process.memoryUsage().rss / 1_048_576).toFixed(1) }));
await notifications.close();
for (const socket of sockets) socket.destroy();
hole.close();
if (redis) {
  const keys = await redis.keys(`*${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
}
await rm(dir, { recursive: true, force: true });
