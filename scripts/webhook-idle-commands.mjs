// What an idle webhook deliverer costs Redis (docs/decisions/0075-idle-webhook-delivery.md):
// starts a redis-server of its own on a free port, opens the notifications of one gateway with
// a webhook configured (it takes all 16 outbox shards), lets it settle, then counts with
// MONITOR every command the gateway's connection sends during a window with no events:
// commands a script runs inside Redis (source "lua") are not counted, they are part of the
// script's one command. Prints the counts per command, per second, and the bursts (commands
// less than 10 ms apart: about one round trip each).
//   npm run build && node scripts/webhook-idle-commands.mjs [seconds=60] [settle-seconds=3]
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { parseConfig } from '../dist/config/load-config.js';
import { openNotifications } from '../dist/notifications/open-notifications.js';
import { freePort } from './free-port.mjs';

const [secondsText = '60', settleText = '3'] = process.argv.slice(2);
const seconds = Number(secondsText);
const BURST_GAP_S = 0.01;

const port = await freePort();
const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
const url = `redis://127.0.0.1:${port}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
for (let i = 0; ; i++) {
  const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
    probe.disconnect();
    break;
  } catch (error) {
    probe.disconnect();
    if (i > 100) throw error;
    await sleep(50);
  }
}

const dir = await mkdtemp(join(tmpdir(), 'agentgw-idle-'));
const config = parseConfig({ agents: { demo: { upstream: 'http://127.0.0.1:9/api/v1' } }, notifications: { webhooks: [{ url: 'http://127.0.0.1:9/hook', secret: 'idle-commands-secret-0123456789' }], dir } }, 'bench', {});
const redis = new Redis(url, { connectionName: 'agentgw-webhooks', enableAutoPipelining: true });
const notifications = await openNotifications(config.notifications, { redis, redisPrefix: 'agentgw:', logger: pino({ level: 'warn' }), clock: { now: () => Date.now() } });
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
server.kill('SIGTERM');
await rm(dir, { recursive: true, force: true });
