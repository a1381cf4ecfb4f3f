// The key store at scale (issue 34, docs/design.md, "Scale of the control plane"): a throwaway redis-server filled to
// each size in turn (10k, 100k, 1,000,000 keys by default) directly in the store's layout —
// each record made by the product's own constructor (newKeyRecord) and written with its own
// record and index encoders (dist/keys/), pipelined — and one built gateway process in front
// of it the whole time. A page that returns fewer rows than asked while more keys match its
// filter (by the product's own matchesPage) stops the run: a figure timed over empty pages
// cannot be reported. At each size: admin list
// pages per filter (p50/p99 over cursor walks), a timed run of creates and revokes through
// the admin API, the gateway's RSS after listing, Redis memory per key.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { startBenchRedis } from '../lib/bench-redis.mjs';
import { startGatewayProcess } from '../lib/gateway.mjs';
import { stopAll } from '../lib/processes.mjs';
import { memoryKb } from '../lib/proc-stats.mjs';
import { percentiles, round } from '../lib/stats.mjs';
import { renderTable } from '../lib/table.mjs';

export const USAGE = `node bench/run.mjs keys [--sizes 10000,100000,1000000] [--pages 40] [--creates 5000] [--revokes 2000] [--json FILE]
node bench/run.mjs keys --file [--sizes 1000,10000,50000]

  Build first (npm run build): the gateway and the layout writer come from dist/.
  --sizes LIST   store sizes, ascending; the store grows from one to the next (default 10000,100000,1000000)
  --pages N      pages timed per filter per size, following next_cursor (default 40)
  --creates N    keys created through the admin API per size, 32 in flight (default 5000)
  --revokes N    of those, revoked through the admin API, 32 in flight (default 2000)
  --json FILE    also write the figures as JSON
  --file         the file store instead (no gateway, no Redis): per size, the file's size,
                 a create through the KeyService (it rewrites the file), a page of a name
                 search, and a fresh load of the file
`;

const repoRoot = join(import.meta.dirname, '..', '..');
const PREFIX = 'benchkeys:';
const TOKEN = `bench-admin-${randomBytes(8).toString('hex')}`;
const ACCOUNTS = 100_000;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Label, admin query, and the same filter as the store's page query (matchesPage's shape). */
const FILTERS = [
  ['none', '', {}],
  ['account', '&account=acct42', { account: 'acct42' }],
  ['agent', '&agent=sales', { agent: 'sales' }],
  ['status=active', '&status=active', { status: 'active' }],
  ['status=revoked', '&status=revoked', { status: 'revoked' }],
  ['status=expired', '&status=expired', { status: 'expired' }],
  ['name_prefix', '&name_prefix=bill', { namePrefix: 'bill' }],
  ['agent+status+name', '&agent=sales&status=active&name_prefix=bill', { agent: 'sales', status: 'active', namePrefix: 'bill' }],
];
const PAGE_LIMIT = 50;

/** How many keys in the store each filter matches, kept as the bench writes them (never asked of the store it checks). */
class FilterTally {
  constructor(matchesPage) {
    this.matchesPage = matchesPage;
    this.counts = new Map(FILTERS.map(([label]) => [label, 0]));
  }

  add(record, nowMs) {
    for (const [label, , query] of FILTERS) if (this.matchesPage(record, { ...query, nowMs })) this.counts.set(label, this.counts.get(label) + 1);
  }
}

/**
 * Checks one page of a walk: fewer rows than asked while more match is a broken listing (or
 * a broken fill), and the bench refuses to report times over it. Returns the walk's rows so far.
 */
export function checkPage(label, pageNumber, rows, nextCursor, seenBefore, matching) {
  const left = matching - seenBefore;
  const asked = Math.min(PAGE_LIMIT, left);
  if (rows < asked) throw new Error(`keys: refusing the run: filter ${label}, page ${pageNumber + 1} returned ${rows} rows of the ${asked} asked while ${left} matching keys are not listed yet`);
  const seen = seenBefore + rows;
  if (nextCursor === null && seen < matching) throw new Error(`keys: refusing the run: filter ${label} ended after ${seen} rows while ${matching} keys match`);
  return seen;
}

function keyId() {
  const bytes = randomBytes(16);
  let out = 'key_';
  for (const b of bytes) out += BASE62[b % 62];
  return out;
}

function writeConfig(tmpDir, redisUrl) {
  const path = join(tmpDir, 'gateway.yaml');
  writeFileSync(
    path,
    `# Written by bench/scenarios/keys.mjs
listen: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0, tokens: [ { name: bench, token: ${JSON.stringify(TOKEN)}, role: admin } ] }
# 1 s rather than the 100 ms default: on a loaded shared machine a slow page is then
# measured as its latency, not turned into a 503.
redis: { url: ${JSON.stringify(redisUrl)}, prefix: ${JSON.stringify(PREFIX)}, command_timeout: 1s }
plans: { starter: { windows: [ { requests: 1000, per: 1m } ] } }
agents:
  support: { upstream: http://127.0.0.1:9/api/v1 }
  sales: { upstream: http://127.0.0.1:9/api/v1 }
keys: { store: redis }
audit: { file: ${JSON.stringify(join(tmpDir, 'audit.jsonl'))}, spool: ${JSON.stringify(join(tmpDir, 'spool.jsonl'))} }
log: { level: info, file: ${JSON.stringify(join(tmpDir, 'gateway.log'))} }
`,
  );
  return path;
}

/** Writes keys [from, to) in the store's layout with the build's own constructor and encoders, 1,000 a pipeline. */
async function fill(redis, dist, tally, from, to, nowMs) {
  const { recordFields } = dist.fields;
  const { indexEntries, indexFields, KeyIndexNames } = dist.index;
  const { newKeyRecord } = dist.record;
  const head = `{${PREFIX}keys}:`;
  const names = new KeyIndexNames(head);
  for (let start = from; start < to; start += 1_000) {
    const pipeline = redis.pipeline();
    for (let i = start; i < Math.min(to, start + 1_000); i++) {
      // Creation times one millisecond apart, in the past, oldest first.
      const createdMs = nowMs - 10 * 86_400_000 + i;
      const record = {
        ...newKeyRecord({
          keyId: keyId(),
          hash: randomBytes(32).toString('hex'),
          account: `acct${i % ACCOUNTS}`,
          plan: 'starter',
          agents: i % 10 === 0 ? ['support', 'sales'] : ['support'],
          name: i % 100 === 10 ? `Billing export ${i}` : `svc-${i}`,
          createdAt: new Date(createdMs).toISOString(),
          // 1 in 20 expires: half of those already in the past.
          expiresAt: i % 20 === 3 ? new Date(nowMs + (i % 40 === 3 ? -1 : 1) * 86_400_000).toISOString() : null,
        }),
        revokedAt: i % 50 === 11 ? new Date(createdMs + 1_000).toISOString() : null,
      };
      tally.add(record, nowMs);
      pipeline.hset(`${head}key:${record.hash}`, ...recordFields(record), ...indexFields(record));
      pipeline.set(`${head}keyid:${record.keyId}`, record.hash);
      for (const [key, score, member] of indexEntries(names, record)) pipeline.zadd(key, score, member);
    }
    for (const [error] of await pipeline.exec()) if (error) throw error;
  }
}

async function admin(dispatcher, adminUrl, method, path, body) {
  const answer = await request(`${adminUrl}${path}`, {
    method,
    dispatcher,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await answer.body.json();
  if (answer.statusCode >= 300) throw new Error(`${method} ${path}: ${answer.statusCode} ${JSON.stringify(json)}`);
  return json;
}

/** `count` calls of `call(i)`, `inFlight` at a time; returns calls a second. */
async function rate(count, inFlight, call) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await call(next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

/** The file store at each size: what a create, a page and a load cost as the file grows. */
async function runFileStore(sizes) {
  const dist = (path) => import(pathToFileURL(join(repoRoot, 'dist', path)).href);
  const { FileKeyStore } = await dist('keys/file-key-store.js');
  const { KeyService } = await dist('keys/key-service.js');
  const { generateApiKey } = await dist('keys/key-format.js');
  const { newKeyRecord } = await dist('keys/key-record.js');
  const { toStoredRecord } = await dist('keys/key-record-codec.js');
  const { silentLogger } = await dist('logger.js');
  const config = { plans: new Map([['starter', { windows: [] }]]), agents: new Map([['support', {}]]) };
  const rows = [];
  for (const size of sizes) {
    const dir = mkdtempSync(join(tmpdir(), 'agentgw-bench-keyfile-'));
    try {
      const path = join(dir, 'keys.json');
      const keys = Array.from({ length: size }, (_, i) => {
        const { keyId, hash } = generateApiKey();
        return toStoredRecord(newKeyRecord({ keyId, hash, account: `acct${i % 100}`, plan: 'starter', agents: ['support'], name: `svc-${i}`, createdAt: new Date(Date.now() - 86_400_000 + i).toISOString() }));
      });
      writeFileSync(path, JSON.stringify({ version: 1, keys }, null, 2));
      const store = await FileKeyStore.open({ path, logger: silentLogger, watch: false });
      const service = new KeyService({ store, config });
      let started = performance.now();
      for (let i = 0; i < 20; i++) await service.createKey({ account: 'bench', plan: 'starter', agents: ['support'] });
      const createMs = (performance.now() - started) / 20;
      started = performance.now();
      let cursor;
      for (let i = 0; i < 20; i++) cursor = (await service.listKeyPage({ limit: 50, cursor, namePrefix: 'svc-1' })).nextCursor ?? undefined;
      const pageMs = (performance.now() - started) / 20;
      started = performance.now();
      const reopened = await FileKeyStore.open({ path, logger: silentLogger, watch: false });
      const loadMs = performance.now() - started;
      await Promise.all([store.close(), reopened.close()]);
      rows.push([String(size), String(round(statSync(path).size / 1e6, 1)), String(round(createMs, 1)), String(round(pageMs, 2)), String(round(loadMs, 0))]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const table = renderTable(['keys', 'file MB', 'create ms', 'page ms', 'load ms'], rows);
  process.stdout.write(`${table.text}\n\n${table.markdown}\n`);
}

export async function run(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      file: { type: 'boolean', default: false },
      sizes: { type: 'string' },
      pages: { type: 'string', default: '40' },
      creates: { type: 'string', default: '5000' },
      revokes: { type: 'string', default: '2000' },
      json: { type: 'string' },
    },
  });
  if (values.file) return runFileStore((values.sizes ?? '1000,10000,50000').split(',').map(Number));
  const sizes = (values.sizes ?? '10000,100000,1000000').split(',').map(Number);
  const PAGES = Number(values.pages);
  const CREATES = Number(values.creates);
  const REVOKES = Number(values.revokes);
  const dist = {
    fields: await import(pathToFileURL(join(repoRoot, 'dist/keys/redis-key-fields.js')).href),
    index: await import(pathToFileURL(join(repoRoot, 'dist/keys/redis-key-index.js')).href),
    record: await import(pathToFileURL(join(repoRoot, 'dist/keys/key-record.js')).href),
  };
  const { matchesPage, nameKey } = await import(pathToFileURL(join(repoRoot, 'dist/keys/key-pages.js')).href);
  const tally = new FilterTally((record, query) => matchesPage(record, query.namePrefix === undefined ? query : { ...query, namePrefix: nameKey(query.namePrefix) }));
  const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-bench-keys-'));
  // Always a throwaway server: the bench fills it with a million keys.
  delete process.env.REDIS_URL;
  const benchRedis = await startBenchRedis({ tmpDir, fdLimit: undefined });
  const redis = new Redis(benchRedis.url);
  const dispatcher = new Agent({ connections: 32 });
  const rows = [];
  try {
    const baseMemory = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1]);
    const configPath = writeConfig(tmpDir, benchRedis.url);
    const gateway = await startGatewayProcess({ repoRoot, configPath, redisUrl: benchRedis.url, tmpDir, fdLimit: undefined });
    const rssAtStart = memoryKb(gateway.pid).rssKb;
    let filled = 0;
    let created = 0;
    for (const size of sizes) {
      const fillStarted = performance.now();
      await fill(redis, dist, tally, filled, size - created, Date.now());
      const fillSeconds = (performance.now() - fillStarted) / 1000;
      filled = size - created;
      process.stdout.write(`keys: ${size} in the store (filled in ${round(fillSeconds, 1)} s)\n`);
      const row = { size, fillSeconds: round(fillSeconds, 1), loadAverage: round(loadavg()[0], 1), pages: {} };
      for (const [label, query] of FILTERS) {
        const times = [];
        let cursor = '';
        let returned = 0;
        let seen = 0;
        for (let n = 0; n < PAGES; n++) {
          const started = performance.now();
          const page = await admin(dispatcher, gateway.adminUrl, 'GET', `/admin/v1/keys?limit=${PAGE_LIMIT}${query}${cursor}`);
          times.push(performance.now() - started);
          returned += page.data.length;
          seen = checkPage(label, n, page.data.length, page.next_cursor, seen, tally.counts.get(label));
          // At the end of the list the walk starts again from its first page.
          if (page.next_cursor === null) seen = 0;
          cursor = page.next_cursor === null ? '' : `&cursor=${page.next_cursor}`;
        }
        const p = percentiles(times, [50, 99]);
        row.pages[label] = { p50: round(p.p50, 2), p99: round(p.p99, 2), rowsPerPage: round(returned / PAGES, 1) };
      }
      const createdKeys = [];
      row.createsPerSecond = round(
        await rate(CREATES, 32, async (i) => {
          const key = await admin(dispatcher, gateway.adminUrl, 'POST', '/admin/v1/keys', { account: `acct${i % ACCOUNTS}`, plan: 'starter', agents: ['support'], name: 'bench create' });
          createdKeys.push(key);
        }),
        0,
      );
      created += CREATES;
      const revokes = Math.min(REVOKES, createdKeys.length);
      row.revokesPerSecond = round(await rate(revokes, 32, (i) => admin(dispatcher, gateway.adminUrl, 'POST', `/admin/v1/keys/${createdKeys[i].key_id}/revoke`)), 0);
      // The keys made through the API count in the filters' tallies as the listing shows them.
      const tallyNow = Date.now();
      for (const [i, key] of createdKeys.entries()) tally.add({ account: key.account, agents: key.agents, name: key.name, expiresAt: null, revokedAt: i < revokes ? 'revoked' : null }, tallyNow);
      const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1]);
      row.redisBytesPerKey = round((usedMemory - baseMemory) / size, 0);
      row.gatewayRssMb = round(memoryKb(gateway.pid).rssKb / 1024, 1);
      rows.push(row);
      process.stdout.write(`${JSON.stringify(row)}\n`);
    }
    await gateway.stop();
    const header = ['keys', ...FILTERS.map(([label]) => `${label} p50/p99 ms`), 'creates/s', 'revokes/s', 'gateway RSS MB', 'Redis B/key'];
    const table = rows.map((r) => [String(r.size), ...FILTERS.map(([label]) => `${r.pages[label].p50} / ${r.pages[label].p99}`), String(r.createsPerSecond), String(r.revokesPerSecond), String(r.gatewayRssMb), String(r.redisBytesPerKey)]);
    process.stdout.write(`\ngateway RSS at start: ${round(rssAtStart / 1024, 1)} MB\n${renderTable(header, table).text}\n\n${renderTable(header, table).markdown}\n`);
    if (values.json) writeFileSync(values.json, `${JSON.stringify({ rssAtStartMb: round(rssAtStart / 1024, 1), rows }, null, 2)}\n`);
  } finally {
    await dispatcher.close();
    redis.disconnect();
    await stopAll();
    await benchRedis.close();
    rmSync(tmpDir, { recursive: true, force: true });
  }
}
