// The Redis the bench runs against, found the way the tests find theirs: REDIS_URL when set
// (shared: the bench then uses its own key prefix and cannot reset anything), else a
// throwaway redis-server child on a free port. Also reads INFO commandstats for scenario 5.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../scripts/free-port.mjs';
import { spawnProcess } from './processes.mjs';

const REDIS_BINARIES = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'];

/**
 * @returns {Promise<{ url: string, shared: boolean, pid: number | null, version: string,
 *   commandStats: () => Promise<Record<string, number>>, close: () => Promise<void> }>}
 */
export async function startBenchRedis({ tmpDir, fdLimit }) {
  let url = process.env.REDIS_URL;
  let handle = null;
  if (!url) {
    const binary = REDIS_BINARIES.find((path) => existsSync(path));
    if (!binary) throw new Error('no REDIS_URL and no redis-server binary (apt-get install -y redis-server)');
    const port = await freePort();
    handle = await spawnProcess({
      name: 'redis-server',
      command: binary,
      args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--maxclients', '10000'],
      fdLimit,
      readyPattern: /Ready to accept connections/,
      logFile: join(tmpDir, 'redis.log'),
    });
    url = `redis://127.0.0.1:${port}/0`;
  }
  const client = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
  client.on('error', () => {});
  const server = parseInfo(await client.info('server'));
  return {
    url,
    shared: handle === null,
    pid: handle?.pid ?? null,
    version: server.redis_version ?? null,
    commandStats: async () => parseCommandStats(await client.info('commandstats')),
    close: async () => {
      client.disconnect();
      await handle?.stop();
    },
  };
}

function parseInfo(text) {
  const out = {};
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

/** `cmdstat_evalsha:calls=12,usec=…` → { evalsha: 12 } (subcommands keep their `|`). */
export function parseCommandStats(text) {
  const out = {};
  for (const [name, value] of Object.entries(parseInfo(text))) {
    if (!name.startsWith('cmdstat_')) continue;
    const calls = /(?:^|,)calls=(\d+)/.exec(value);
    if (calls) out[name.slice('cmdstat_'.length)] = Number(calls[1]);
  }
  return out;
}

/** after − before per command, without the bench's own INFO calls and zero rows. */
export function commandStatsDelta(before, after) {
  const out = {};
  for (const [name, calls] of Object.entries(after)) {
    if (name === 'info') continue;
    const delta = calls - (before[name] ?? 0);
    if (delta > 0) out[name] = delta;
  }
  return out;
}
