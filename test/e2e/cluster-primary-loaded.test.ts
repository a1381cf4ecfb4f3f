// `serve --workers 2`'s primary loads no config schema, Redis client, metrics library, control
// plane or request path (decision 0112): the built CLI with a preload that records every module
// each process resolves (test/helpers/loaded-modules-preload.mjs). What is compared is module
// URLs, never memory or time; the workers, which do all of that, are the record's control.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnBuiltCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const PRELOAD = join(process.cwd(), 'test/helpers/loaded-modules-preload.mjs');

/** What only a worker may load: a package's path or one of dist/'s files. */
const WORKER_ONLY = [
  '/node_modules/zod/',
  '/node_modules/yaml/',
  '/node_modules/ioredis/',
  '/node_modules/prom-client/',
  '/node_modules/undici/',
  '/node_modules/pino/',
  '/dist/config/load-config.js',
  '/dist/config/schema.js',
  '/dist/redis/redis-client.js',
  '/dist/metrics/metrics.js',
  '/dist/admin/',
  '/dist/gateway.js',
  '/dist/keys/key-service.js',
];

let dir: string;
let redis: TestRedis;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-primary-loaded-'));
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the primary of serve --workers 2', () => {
  it('loads none of what the workers load to serve', async () => {
    const out = join(dir, 'modules');
    await mkdir(out);
    await writeFile(
      join(dir, 'gateway.yaml'),
      stringify({
        listen: { host: '127.0.0.1', port: await freePort() },
        admin: { host: '127.0.0.1', port: await freePort() },
        redis: { url: redis.url, prefix: `agentgw-primary-loaded-${process.pid}:` },
        agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } },
        keys: { file: join(dir, 'keys.json') },
        audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), usage_dir: join(dir, 'usage'), admin_file: join(dir, 'admin.jsonl') },
        log: { level: 'warn' },
        shutdown_grace: '1s',
      }),
    );
    const cli = spawnBuiltCli(['serve', '--config', join(dir, 'gateway.yaml'), '--workers', '2'], { group: true, nodeArgs: ['--import', PRELOAD], env: { AGENTGW_LOADED_MODULES_DIR: out } });
    await cli.waitForOutput((text) => text.includes('agent-gateway listening') && text.includes('2 workers'), 'the cluster to listen', 60_000);
    cli.child.kill('SIGTERM');
    const [code] = await cli.exited;
    expect(code, cli.output()).toBe(0);

    // One record per process, written at its exit: the primary's is named by its pid.
    const files = await readdir(out);
    expect(files.sort()).toHaveLength(3);
    const modulesOf = async (file: string) => (await readFile(join(out, file), 'utf8')).split('\n').filter(Boolean);
    const primary = await modulesOf(`${cli.child.pid}.txt`);
    const workers = await Promise.all(files.filter((file) => file !== `${cli.child.pid}.txt`).map(modulesOf));
    const loaded = (urls: string[]) => WORKER_ONLY.filter((part) => urls.some((url) => url.includes(part)));

    // The record is taken: the primary's own modules are in it, and each worker loads every one of the list.
    expect(primary.some((url) => url.endsWith('/dist/cli/cluster-primary.js'))).toBe(true);
    for (const worker of workers) expect(loaded(worker)).toEqual(WORKER_ONLY);
    expect(loaded(primary)).toEqual([]);
  }, 180_000);
});
