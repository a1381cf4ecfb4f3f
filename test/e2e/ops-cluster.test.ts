// `serve --workers 2` with the built CLI: two workers share one port, the admin port (served
// by worker 1, the admin worker, decision 0112) has /metrics gather both through the primary
// (AggregatorRegistry, one `worker` label per worker), a dead worker is replaced (worker 1
// too: the admin port comes back), SIGHUP and SIGTERM reach every worker, a config a worker
// refuses is said once by the primary, and the instance exits 0.
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileKeyStore } from '../../src/keys/file-key-store.js';
import { KeyService } from '../../src/keys/key-service.js';
import { parseWorkerCount, perWorkerPath, withWorkerPaths } from '../../src/cli/cluster-workers.js';
import { WORKER_MALLOC_ARENA_MAX, WORKER_SEMI_SPACE_MB } from '../../src/cli/worker-runtime.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { spawnBuiltCli, type CliChild } from '../helpers/cli.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { freePort } from '../helpers/free-port.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { type MetricSample, parseMetrics, sumSamples } from '../helpers/metrics-text.js';

let dir: string;
let redis: TestRedis;
let upstream: FakeUpstream;
let key: string;
let port: number;
let adminPort: number;
let primary: CliChild;
const children: ChildProcess[] = [];

function runCli(args: string[]): CliChild {
  const cli = spawnBuiltCli(args, { group: true });
  children.push(cli.child);
  return cli;
}

type LogLine = Record<string, unknown>;
function logLines(cli: CliChild): LogLine[] {
  return cli
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** One POST on its own connection (no keep-alive), so the cluster can hand it to either worker. */
function chatOnNewConnection(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/agents/support/api/v1/chat', method: 'POST', agent: false, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ message: 'hi' }));
  });
}

async function scrape(): Promise<MetricSample[]> {
  const res = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

function configDocument(): Record<string, unknown> {
  return {
    listen: { host: '127.0.0.1', port },
    admin: { host: '127.0.0.1', port: adminPort, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
    redis: { url: redis.url, prefix: `agentgw-ops-cluster-${process.pid}:` },
    // An hour's cache: a revoked key refused at all was refused by the invalidation, not an expiry.
    keys: { file: join(dir, 'keys.json'), cache_ttl: '1h' },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl'), usage_dir: join(dir, 'usage'), admin_file: join(dir, 'admin-audit.jsonl') },
    shutdown_grace: '2s',
    agents: { support: { upstream: upstream.baseUrl } },
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-ops-cluster-'));
  redis = await startRedis();
  upstream = await startFakeUpstream();
  port = await freePort();
  adminPort = await freePort();
  await writeFile(join(dir, 'gateway.yaml'), stringify(configDocument()));
  const store = await FileKeyStore.open({ path: join(dir, 'keys.json'), logger: silentLogger, watch: false });
  ({ rawKey: key } = await new KeyService({ store, config: parseConfig(configDocument(), 'test', {}) }).createKey({ account: 'acme', plan: 'scale', agents: ['support'] }));
  await store.close();
  primary = runCli(['serve', '--config', join(dir, 'gateway.yaml'), '--workers', '2']);
  await primary.waitForOutput((out) => out.includes('agent-gateway listening') && out.includes('2 workers'), 'the cluster to listen');
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await upstream?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const ADMIN_TOKEN = `ops-cluster-${process.pid}-0123456789`;
/** How long a wait for a state goes on before the test calls it hung: not a speed bound. */
const GUARD_MS = 30_000;

describe('serve --workers 2', () => {
  it('serves one port from two workers and /metrics on the admin port shows both, summing to the requests sent', async () => {
    const statuses: number[] = [];
    for (let batch = 0; batch < 4; batch++) statuses.push(...(await Promise.all(Array.from({ length: 10 }, () => chatOnNewConnection()))));
    expect(statuses).toEqual(Array(40).fill(200));

    const samples = await scrape();
    const ok = { agent: 'support', route: 'chat', status: '2xx' };
    expect(sumSamples(samples, 'agentgw_requests_total', ok)).toBe(40);
    const perWorker = ['1', '2'].map((worker) => sumSamples(samples, 'agentgw_requests_total', { ...ok, worker }));
    expect(perWorker[0]! + perWorker[1]!).toBe(40);
    for (const count of perWorker) expect(count).toBeGreaterThan(0);
    // Every series names its worker, and each worker reports its own process metrics.
    expect(samples.filter((s) => s.name.startsWith('agentgw_')).every((s) => s.labels.worker === '1' || s.labels.worker === '2')).toBe(true);
    for (const name of ['process_resident_memory_bytes', 'process_cpu_seconds_total', 'nodejs_heap_size_used_bytes']) {
      const workers = samples.filter((s) => s.name === name).map((s) => s.labels.worker).sort();
      expect({ name, workers }).toEqual({ name, workers: ['1', '2'] });
      for (const sample of samples.filter((s) => s.name === name)) expect(sample.value).toBeGreaterThan(0);
    }
    expect(sumSamples(samples, 'agentgw_request_duration_seconds_count', { route: 'chat' })).toBe(40);
    // Each serving process turned V8's allocation-site pretenuring off for itself (decision 0010).
    const listeningLines = (): LogLine[] => logLines(primary).filter((line) => line.msg === 'worker listening');
    await primary.waitForOutput(() => listeningLines().length === 2, "both workers' listening lines");
    const listening = listeningLines();
    expect(listening.map((line) => line.v8_flags)).toEqual([['--no-allocation-site-pretenuring'], ['--no-allocation-site-pretenuring']]);
    // The primary forked each worker with a capped young generation and glibc arenas (decision 0028).
    expect(listening.map((line) => line.node_args)).toEqual([[`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`], [`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`]]);
    expect(listening.map((line) => line.malloc_arena_max)).toEqual([WORKER_MALLOC_ARENA_MAX, WORKER_MALLOC_ARENA_MAX]);
  });

  it('answers /healthz and /readyz on the admin port and nothing of it on the public port', async () => {
    expect((await fetch(`http://127.0.0.1:${adminPort}/healthz`)).status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
  });

  it('forwards SIGHUP to every worker, each of which reloads the file', async () => {
    primary.child.kill('SIGHUP');
    await primary.waitForOutput((out) => (out.match(/"msg":"config reloaded"/g) ?? []).length >= 2, 'both workers to reload');
    const reloaded = logLines(primary).filter((line) => line.msg === 'config reloaded').map((line) => line.worker);
    expect(reloaded.sort()).toEqual([1, 2]);
  });

  it('replaces a worker that dies, under the same worker label', async () => {
    const victim = logLines(primary).find((line) => line.msg === 'worker listening' && line.worker === 2)!;
    process.kill(victim.pid as number, 'SIGKILL');
    await primary.waitForOutput((out) => out.includes('worker died; replacing it'), 'the primary to notice');
    await primary.waitForOutput(() => logLines(primary).filter((line) => line.msg === 'worker listening' && line.worker === 2).length === 2, 'a new worker 2');
    const statuses = await Promise.all(Array.from({ length: 10 }, () => chatOnNewConnection()));
    expect(statuses).toEqual(Array(10).fill(200));
    const workers = (await scrape()).filter((s) => s.name === 'process_resident_memory_bytes').map((s) => s.labels.worker).sort();
    expect(workers).toEqual(['1', '2']);
  });

  it('serves the admin API on the admin port: a key made there works on the workers, its usage is reported, its revocation applies', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const created = await fetch(`http://127.0.0.1:${adminPort}/admin/v1/keys`, { method: 'POST', headers: auth, body: JSON.stringify({ account: 'cluster-acct', plan: 'scale', agents: ['support'] }) });
    expect(created.status).toBe(201);
    const { key: adminKey, key_id: keyId } = (await created.json()) as { key: string; key_id: string };
    const chatWith = async (k: string) =>
      (await fetch(`http://127.0.0.1:${port}/agents/support/api/v1/chat`, { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json', connection: 'close' }, body: '{"message":"hi"}' })).status;
    // Until six answers are 200 (a worker that has not seen the new key yet answers 401): a
    // condition, with a guard against a hang only, however loaded the machine.
    const deadline = Date.now() + GUARD_MS;
    const statuses: number[] = [];
    while (statuses.filter((s) => s === 200).length < 6 && Date.now() < deadline) statuses.push(await chatWith(adminKey));
    expect(statuses.filter((s) => s === 200).length).toBe(6);
    expect(statuses.filter((s) => s !== 200 && s !== 401)).toEqual([]);
    const answered = statuses.length;
    let rows: { requests: number }[] = [];
    for (const until = Date.now() + GUARD_MS; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      const usage = await fetch(`http://127.0.0.1:${adminPort}/admin/v1/usage?key_id=${keyId}`, { headers: auth });
      rows = ((await usage.json()) as { data: { requests: number }[] }).data;
      if (rows.reduce((n, r) => n + r.requests, 0) === answered - statuses.filter((s) => s === 401).length) break;
    }
    // Every request that got past authentication is one record (a 401 of a key not yet seen is none).
    expect(rows.reduce((n, r) => n + r.requests, 0)).toBe(statuses.filter((s) => s !== 401).length);
    expect((await fetch(`http://127.0.0.1:${adminPort}/admin/v1/keys/${keyId}/revoke`, { method: 'POST', headers: { authorization: auth.authorization } })).status).toBe(200);
    // The revocation reaches the workers (each has the key cached for an hour: only the
    // invalidation can refuse it); waited for, not timed.
    const revokedBy = Date.now() + GUARD_MS;
    let last = 200;
    while (Date.now() < revokedBy && (last = await chatWith(adminKey)) === 200) await new Promise((r) => setTimeout(r, 20));
    expect(last).toBe(401);
  }, 120_000);

  it('brings the admin port back when worker 1, the admin worker, is replaced', async () => {
    const adminWorker = logLines(primary).find((line) => line.msg === 'worker listening' && line.worker === 1)!;
    process.kill(adminWorker.pid as number, 'SIGKILL');
    await primary.waitForOutput((out) => out.includes('"msg":"admin listener back"'), 'a new worker 1 to serve the admin port', 60_000);
    expect(logLines(primary).find((line) => line.msg === 'worker died; replacing it' && line.worker === 1)).toMatchObject({ admin_listener: 'down until worker 1 is back' });
    expect((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status).toBe(200);
    // The new admin worker gathers both workers, worker 2 included, which was never restarted for this.
    const workers = (await scrape()).filter((s) => s.name === 'process_resident_memory_bytes').map((s) => s.labels.worker).sort();
    expect(workers).toEqual(['1', '2']);
    // The public port was served by worker 2 meanwhile and by both now.
    expect(await Promise.all(Array.from({ length: 6 }, () => chatOnNewConnection()))).toEqual(Array(6).fill(200));
  });

  it('on SIGTERM stops every worker, turns /readyz 503 while they drain, and exits 0', async () => {
    const workerPids = new Set(logLines(primary).filter((l) => l.msg === 'worker listening').map((l) => l.pid));
    upstream.handle(async (_req, res) => {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ response: 'finished while draining', tool_calls: [], metadata: { tokens_used: 1 } }));
    });
    const inFlight = chatOnNewConnection();
    await new Promise((resolve) => setTimeout(resolve, 200));
    primary.child.kill('SIGTERM');
    const signalledAt = Date.now();
    let readiness = (await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status;
    while (readiness === 200 && Date.now() - signalledAt < 5_000) readiness = (await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status;
    expect(readiness).toBe(503);
    expect(await inFlight).toBe(200);
    const [code, signal] = await primary.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    const stopped = logLines(primary).filter((line) => line.msg === 'stopped');
    expect(stopped.filter((line) => line.worker !== undefined).map((line) => line.worker).sort()).toEqual([1, 2]);
    expect(stopped.find((line) => line.role === 'primary')).toMatchObject({ clean: true });
    for (const pid of workerPids) {
      expect(() => process.kill(pid as number, 0)).toThrow();
    }
    await expect(fetch(`http://127.0.0.1:${port}/agents/support/api/v1/chat`, { method: 'POST' })).rejects.toThrow();
  });
});

describe('serve --workers: refusals and helpers', () => {
  it('refuses an invalid worker count and embedded mode (per-process limits) with exit 1', async () => {
    const bad = runCli(['serve', '--config', join(dir, 'gateway.yaml'), '--workers', 'many']);
    expect((await bad.exited)[0]).toBe(1);
    expect(bad.output()).toContain('--workers must be a positive integer or "auto"');

    const embedded: Record<string, unknown> = { ...configDocument(), listen: { host: '127.0.0.1', port: await freePort() }, admin: { host: '127.0.0.1', port: await freePort() } };
    delete embedded.redis;
    await writeFile(join(dir, 'embedded.yaml'), stringify(embedded));
    const refused = runCli(['serve', '--config', join(dir, 'embedded.yaml'), '--workers', '2']);
    expect((await refused.exited)[0]).toBe(1);
    expect(refused.output()).toContain('needs a redis block');
  });

  it("refuses a config a worker cannot load with exit 1 and the worker's config-check message, said once", async () => {
    const invalid = { ...configDocument(), listen: { host: '127.0.0.1', port: await freePort(), bogus_setting: true }, admin: { host: '127.0.0.1', port: await freePort() } };
    await writeFile(join(dir, 'invalid.yaml'), stringify(invalid));
    const refused = runCli(['serve', '--config', join(dir, 'invalid.yaml'), '--workers', '2']);
    expect((await refused.exited)[0]).toBe(1);
    const output = refused.output();
    expect(output).toContain(`invalid config ${join(dir, 'invalid.yaml')}`);
    expect(output).toContain('bogus_setting');
    // Both workers refuse it; the operator reads it once, and not as an exit code.
    expect(output.split('invalid config').length - 1).toBe(1);
    expect(output).not.toContain('exited during startup');
  });

  it('parses --workers and gives each worker its own audit spool', () => {
    expect(parseWorkerCount('1')).toBe(1);
    expect(parseWorkerCount('4')).toBe(4);
    expect(parseWorkerCount('auto', 8)).toBe(8);
    expect(parseWorkerCount('AUTO', 0)).toBe(1);
    for (const bad of ['0', '-1', '1.5', 'two', '', '5000']) expect(parseWorkerCount(bad)).toBeUndefined();
    expect(perWorkerPath('var/audit-spool.jsonl', 2)).toBe('var/audit-spool.worker-2.jsonl');
    expect(perWorkerPath('/tmp/spool', 1)).toBe('/tmp/spool.worker-1');
    const config = parseConfig({ agents: { a: { upstream: 'http://127.0.0.1:1/api/v1' } }, audit: { spool: 'var/s.jsonl' } }, 'test', {});
    expect(withWorkerPaths(config, undefined)).toBe(config);
    expect(withWorkerPaths(config, 3).audit.spool).toBe('var/s.worker-3.jsonl');
    expect(config.audit.spool).toBe('var/s.jsonl');
  });
});
