// `npm run soak`: a long run of the built gateway (dist/, its own process) against a fake
// runner, with Redis when a redis-server binary or REDIS_URL is available, mixing every kind
// of traffic — chat, streams, streams aborted mid-way, slow readers, bad input, bad keys,
// rate-limited keys, runner 500s, resets, garbage and 1 MB bodies, connection churn — and
// printing RSS, heap (after a forced full GC), descriptors, handles and open streams over
// time. At the end it stops the gateway gracefully and checks that every request that got
// past authentication has its audit record. Exit code 1 on any unexpected answer, lost
// record, error log line, request left open on the runner, or unclean gateway exit.
//
//   node scripts/soak.mjs [--duration 3m] [--concurrency 32] [--think 0ms] [--sample 5s] [--no-redis] [--json]
//
// Each of the `--concurrency` loops sends one request after another, pausing `--think` between
// them (0: flat out). SOAK_DURATION overrides --duration.
// --json prints a summary object as the last line (test/faults/soak-short.test.ts reads it).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { freePort } from './free-port.mjs';
import { connectInspector, inspectorUrlIn } from './inspector-gc.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'dist/cli/main.js');

function parseArgs(argv) {
  const options = { durationMs: 180_000, concurrency: 32, sampleMs: 5_000, thinkMs: 0, redis: true, json: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--duration') options.durationMs = parseDuration(argv[++i]);
    else if (arg === '--concurrency') options.concurrency = Number(argv[++i]);
    else if (arg === '--sample') options.sampleMs = parseDuration(argv[++i]);
    else if (arg === '--think') options.thinkMs = parseDuration(argv[++i]);
    else if (arg === '--no-redis') options.redis = false;
    else if (arg === '--json') options.json = true;
    else throw new Error(`unknown option ${arg}`);
  }
  if (process.env.SOAK_DURATION) options.durationMs = parseDuration(process.env.SOAK_DURATION);
  return options;
}

function parseDuration(text) {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(String(text));
  if (!match) throw new Error(`bad duration ${text} (use e.g. 20s, 3m)`);
  return Number(match[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[match[2]];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Every process the soak starts (the gateway, redis-server) ends with it, however it ends: a
// thrown error (main's catch calls process.exit), SIGTERM/SIGINT from a test's cleanup or
// Ctrl-C. A failed soak once left its `node --inspect … serve` running for good.
const started = new Set();
function startChild(command, args, options) {
  const child = spawn(command, args, options);
  started.add(child);
  child.once('exit', () => started.delete(child));
  return child;
}
process.once('exit', () => {
  for (const child of started) child.kill('SIGKILL');
});
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => process.exit(1));

// ---------- the fake runner ----------

const EVENT = (text) => `event: token\ndata: {"content":"${text}"}\n\n`;

async function writePaced(res, chunk) {
  if (res.destroyed) return false;
  if (res.write(chunk)) return true;
  await new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
  return !res.destroyed;
}

async function startRunner() {
  const stats = { open: 0 };
  const server = createServer((req, res) => {
    stats.open++;
    res.once('close', () => stats.open--);
    req.socket.setNoDelay(true);
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const mode = (req.url ?? '').split('/')[1];
      const stream = req.url.endsWith('/chat/stream');
      try {
        if (mode === 'err500') {
          res.writeHead(500, { 'content-type': 'application/json' });
          return res.end('{"error":"runner exploded"}');
        }
        if (mode === 'reset') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(EVENT('a'));
          await sleep(10);
          return res.socket?.destroy();
        }
        if (mode === 'garbage') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          return res.end(Buffer.from(Array.from({ length: 2_048 }, (_, i) => (i * 7919) % 256)));
        }
        if (mode === 'huge') {
          res.writeHead(200, { 'content-type': 'application/json' });
          const block = Buffer.alloc(64 * 1024, 0x78);
          if (!(await writePaced(res, '{"response":"'))) return;
          for (let i = 0; i < 16; i++) if (!(await writePaced(res, block))) return;
          return res.end('","metadata":{"tokens_used":1}}');
        }
        if (mode === 'slow' || mode === 'firehose') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.flushHeaders();
          const count = mode === 'slow' ? 30 : 1_000;
          for (let i = 0; i < count; i++) {
            if (mode === 'slow') await sleep(10);
            if (!(await writePaced(res, EVENT(mode === 'slow' ? `t${i}` : 'y'.repeat(1_000))))) return;
          }
          return res.end(`event: done\ndata: {"tokens_used":${count}}\n\n`);
        }
        if (stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(EVENT('Hi'));
          return res.end('event: done\ndata: {"tokens_used":2}\n\n');
        }
        const body = JSON.stringify({ response: 'Hello from the soak runner', tool_calls: [], metadata: { tokens_used: 5 } });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      } catch {
        res.destroy();
      }
    });
  });
  server.on('connection', (socket) => socket.on('error', () => {}));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: server.address().port, stats, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

// ---------- Redis (optional) ----------

async function startRedisServer(dir) {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => {} };
  const binary = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((path) => existsSync(path));
  if (!binary) return undefined;
  const port = await freePort();
  const child = startChild(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
      socket.on('data', (d) => {
        socket.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await sleep(50);
  }
  return {
    url: `redis://127.0.0.1:${port}/0`,
    stop: async () => {
      child.kill('SIGKILL');
    },
  };
}

// ---------- the gateway ----------

async function startGatewayProcess(dir, runnerPort, redisUrl) {
  const [port, adminPort] = [await freePort(), await freePort()];
  const agents = {};
  for (const mode of ['ok', 'slow', 'firehose', 'reset', 'garbage', 'err500', 'huge']) agents[mode] = { upstream: `http://127.0.0.1:${runnerPort}/${mode}/api/v1` };
  const document = {
    listen: { host: '127.0.0.1', port },
    admin: { host: '127.0.0.1', port: adminPort },
    ...(redisUrl ? { redis: { url: redisUrl, prefix: 'soak:' } } : {}),
    keys: { store: 'file', file: join(dir, 'keys.json'), failed_auth: { max_attempts: 1_000_000_000 } },
    limits: { max_body_bytes: 65_536 },
    plans: { bulk: { windows: [{ requests: 1_000_000_000, per: '1m' }] }, tight: { windows: [{ requests: 5, per: '1s' }] } },
    agents,
    stream: { heartbeat: '1s', idle_timeout: '5s', max_duration: '60s' },
    audit: { file: join(dir, 'audit.jsonl'), ...(redisUrl ? { redis_stream: 'soak:audit' } : {}), spool: join(dir, 'spool.jsonl') },
    log: { level: 'warn' },
    shutdown_grace: '5s',
  };
  const configPath = join(dir, 'soak.json');
  await writeFile(configPath, JSON.stringify(document));

  const { parseConfig } = await import(join(ROOT, 'dist/config/load-config.js'));
  const { openCliKeyStore } = await import(join(ROOT, 'dist/cli/keys.js'));
  const { KeyService } = await import(join(ROOT, 'dist/keys/key-service.js'));
  const config = parseConfig(document, configPath, {});
  const store = await openCliKeyStore(config);
  const service = new KeyService({ store, config });
  const bulk = (await service.createKey({ account: 'soak', plan: 'bulk', agents: Object.keys(agents) })).rawKey;
  const tight = (await service.createKey({ account: 'soak-tight', plan: 'tight', agents: ['ok'] })).rawKey;
  const okOnly = (await service.createKey({ account: 'soak-scope', plan: 'bulk', agents: ['slow'] })).rawKey;
  await store.close();

  // The inspector (loopback, random port) lets the soak force a full GC before each sample,
  // so the heap series shows what is retained, not what is merely not collected yet.
  const child = startChild(process.execPath, ['--inspect=127.0.0.1:0', CLI, 'serve', '--config', configPath], { env: { ...process.env, REDIS_URL: '', PORT: '', LOG_FORMAT: 'json' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + 20_000;
  while (!output.includes('agent-gateway listening')) {
    if (child.exitCode !== null) throw new Error(`gateway exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`gateway did not start:\n${output}`);
    await sleep(25);
  }
  const inspectorUrl = inspectorUrlIn(output);
  const inspector = inspectorUrl ? await connectInspector(inspectorUrl) : undefined;
  const collectGarbage = inspector ? Object.assign(() => inspector.collectGarbage(), { close: () => inspector.close() }) : Object.assign(async () => {}, { close: () => {} });
  return { port, adminPort, child, exited, output: () => output, keys: { bulk, tight, okOnly }, collectGarbage };
}

function metric(text, name) {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

async function sample(adminPort, collectGarbage) {
  if (collectGarbage) await collectGarbage();
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  return {
    rssMb: metric(text, 'process_resident_memory_bytes') / 1_048_576,
    heapMb: metric(text, 'nodejs_heap_size_used_bytes') / 1_048_576,
    fds: metric(text, 'process_open_fds'),
    handles: metric(text, 'nodejs_active_handles_total'),
    streams: metric(text, 'agentgw_active_streams'),
  };
}

// ---------- traffic ----------

const BIG_BODY = JSON.stringify({ message: 'x'.repeat(70_000) });

/** Each kind: weight, how to send it, what answers are expected, and whether it must leave an audit record. */
function trafficKinds(keys) {
  const chat = (agent, route = 'chat') => ({ agent, route });
  return [
    { name: 'chat', weight: 30, ...chat('ok'), expect: [200], audited: true },
    { name: 'stream', weight: 15, ...chat('ok', 'chat/stream'), expect: [200], lastEvent: 'done', audited: true },
    { name: 'slow stream', weight: 6, ...chat('slow', 'chat/stream'), expect: [200], lastEvent: 'done', audited: true },
    { name: 'aborted stream', weight: 8, ...chat('slow', 'chat/stream'), abortAfterMs: () => Math.floor(Math.random() * 300), expect: [200], audited: 'if-answered' },
    { name: 'slow reader', weight: 1, ...chat('firehose', 'chat/stream'), slowReader: true, expect: [200], lastEvent: 'done', audited: true },
    { name: 'invalid json', weight: 4, ...chat('ok'), body: '{"message":', expect: [400], audited: true },
    { name: 'invalid request', weight: 3, ...chat('ok'), body: '{"message":"hi","temperature":9}', expect: [400], audited: true },
    { name: 'wrong media type', weight: 2, ...chat('ok'), contentType: 'text/plain', expect: [415], audited: true },
    { name: 'body too large', weight: 1, ...chat('ok'), body: BIG_BODY, expect: [413], audited: 'if-answered', cutAllowed: true },
    { name: 'no key', weight: 2, ...chat('ok'), key: null, expect: [401], audited: false },
    { name: 'invalid key', weight: 2, ...chat('ok'), key: `ha_${'A'.repeat(38)}`, expect: [401], audited: false },
    { name: 'agent not allowed', weight: 1, ...chat('ok'), key: keys.okOnly, expect: [401], audited: false },
    { name: 'unknown agent', weight: 1, ...chat('nobody'), expect: [404], audited: false },
    { name: 'rate limited', weight: 4, ...chat('ok'), key: keys.tight, expect: [200, 429], audited: true },
    { name: 'runner 500', weight: 3, ...chat('err500'), expect: [500], audited: true },
    { name: 'runner reset', weight: 3, ...chat('reset', 'chat/stream'), expect: [200], lastEvent: 'error', audited: true },
    { name: 'runner garbage', weight: 2, ...chat('garbage', 'chat/stream'), expect: [200], lastEvent: 'error', audited: true },
    { name: '1 MB answer', weight: 2, ...chat('huge'), expect: [200], bytes: 1_048_576 + 44, audited: true },
    { name: 'connection churn', weight: 3, churn: true, expect: [], audited: false },
  ];
}

function pick(kinds) {
  const total = kinds.reduce((sum, k) => sum + k.weight, 0);
  let r = Math.random() * total;
  for (const kind of kinds) {
    r -= kind.weight;
    if (r < 0) return kind;
  }
  return kinds[0];
}

function lastEventName(text) {
  const blocks = text.replace(/\r\n?/g, '\n').split('\n\n').filter((b) => b.split('\n').some((l) => l.startsWith('data')));
  const last = blocks.at(-1) ?? '';
  return /^event: ?(.*)$/m.exec(last)?.[1] ?? (last ? 'message' : undefined);
}

/** A reader that takes one chunk every 20 ms for the first second, then reads at full speed. */
function slowRead(port, key, id) {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/agents/firehose/api/v1/chat/stream', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': id } }, async (res) => {
      let tail = '';
      let bytes = 0;
      const take = (chunk) => {
        bytes += chunk.length;
        tail = (tail + chunk.toString('utf8')).slice(-4_096);
      };
      // Listening for 'close' from the start: it may come while we read by hand.
      res.on('close', () => resolve({ status: res.statusCode, text: tail, bytes, ...(res.complete ? {} : { error: 'cut' }) }));
      res.pause();
      const until = performance.now() + 1_000;
      while (performance.now() < until && !res.destroyed) {
        const chunk = res.read();
        if (chunk) take(chunk);
        await sleep(20);
      }
      res.on('data', take);
      res.resume();
    });
    req.on('error', (error) => resolve({ status: 0, text: '', bytes: 0, error: error.code ?? error.message }));
    req.end('{"message":"hi"}');
  });
}

async function sendOne(kind, n, ctx) {
  const id = `soak-${n}`;
  if (kind.churn) {
    await new Promise((resolve) => {
      const socket = connect(ctx.port, '127.0.0.1', () => setTimeout(() => socket.destroy(), Math.random() * 50));
      socket.on('error', () => resolve());
      socket.on('close', () => resolve());
    });
    return { id, kind, status: 0, ok: true };
  }
  if (kind.slowReader) {
    const result = await slowRead(ctx.port, ctx.keys.bulk, id);
    return judge(kind, id, result);
  }
  const headers = { 'content-type': kind.contentType ?? 'application/json', 'x-request-id': id };
  const key = kind.key === undefined ? ctx.keys.bulk : kind.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const controller = kind.abortAfterMs ? new AbortController() : undefined;
  const timer = controller ? setTimeout(() => controller.abort(), kind.abortAfterMs()) : undefined;
  try {
    const response = await request(`http://127.0.0.1:${ctx.port}/agents/${kind.agent}/api/v1/${kind.route}`, { method: 'POST', dispatcher: ctx.dispatcher, headers, body: kind.body ?? '{"message":"hi"}', signal: controller?.signal });
    let bytes = 0;
    let tail = '';
    for await (const chunk of response.body) {
      bytes += chunk.length;
      tail = (tail + chunk.toString('utf8')).slice(-4_096);
    }
    return judge(kind, id, { status: response.statusCode, text: tail, bytes });
  } catch (error) {
    if (controller?.signal.aborted) return { id, kind, status: 0, ok: true, aborted: true };
    return judge(kind, id, { status: 0, text: '', bytes: 0, error: error.code ?? error.name });
  } finally {
    clearTimeout(timer);
  }
}

function judge(kind, id, result) {
  let ok = kind.expect.includes(result.status) && !result.error;
  if (ok && kind.lastEvent) ok = lastEventName(result.text) === kind.lastEvent;
  if (ok && kind.bytes) ok = result.bytes === kind.bytes;
  // A 413 may arrive as a cut connection while the client is still sending the body.
  if (!ok && kind.cutAllowed && result.status === 0) ok = true;
  return { id, kind, status: result.status, ok, detail: ok ? undefined : `${kind.name}: status ${result.status}${result.error ? ` (${result.error})` : ''}${kind.lastEvent ? `, last event ${lastEventName(result.text)}` : ''}, ${result.bytes} bytes` };
}

// ---------- main ----------

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const log = (line) => process.stderr.write(`${line}\n`);
  const dir = await mkdtemp(join(tmpdir(), 'agentgw-soak-'));
  const runner = await startRunner();
  const redis = options.redis ? await startRedisServer(dir) : undefined;
  const gateway = await startGatewayProcess(dir, runner.port, redis?.url);
  const dispatcher = new Agent({ connections: options.concurrency * 2, pipelining: 1 });
  const ctx = { port: gateway.port, keys: gateway.keys, dispatcher };
  const kinds = trafficKinds(gateway.keys);
  log(`soak: ${options.durationMs / 1000} s, ${options.concurrency} loops${options.thinkMs ? ` pausing ${options.thinkMs} ms` : ''}, ${redis ? `Redis ${redis.url}` : 'embedded (no Redis)'}, gateway pid ${gateway.child.pid}`);

  const results = [];
  const counts = { total: 0, unexpected: 0 };
  const unexpected = [];
  let running = true;
  let n = 0;
  const inFlight = new Map();
  const loop = async () => {
    while (running) {
      const kind = pick(kinds);
      const id = n++;
      inFlight.set(id, { kind: kind.name, since: performance.now() });
      const result = await sendOne(kind, id, ctx);
      inFlight.delete(id);
      counts.total++;
      if (!result.ok) {
        counts.unexpected++;
        if (unexpected.length < 20) unexpected.push(result.detail);
      }
      if (result.kind.audited === true || (result.kind.audited === 'if-answered' && result.status > 0)) results.push(result.id);
      if (options.thinkMs > 0) await sleep(options.thinkMs);
    }
  };

  const baseline = await sample(gateway.adminPort, gateway.collectGarbage);
  const samples = [];
  const started = performance.now();
  const loops = Array.from({ length: options.concurrency }, loop);
  log('     t   req/s     total  unexpected   rss MB  heap MB (after a full GC)    fds  handles  streams');
  let lastTotal = 0;
  let lastAt = started;
  while (performance.now() - started < options.durationMs) {
    await sleep(Math.min(options.sampleMs, options.durationMs - (performance.now() - started)));
    const now = performance.now();
    const s = { t: (now - started) / 1000, ...(await sample(gateway.adminPort, gateway.collectGarbage)), total: counts.total };
    samples.push(s);
    const rps = (counts.total - lastTotal) / ((now - lastAt) / 1000);
    [lastTotal, lastAt] = [counts.total, now];
    const stuck = [...inFlight.values()].filter((f) => now - f.since > 5_000).map((f) => f.kind);
    if (stuck.length > 0) log(`  in flight for over 5 s: ${stuck.join(', ')}`);
    log(`${s.t.toFixed(0).padStart(5)}s ${rps.toFixed(0).padStart(7)} ${String(counts.total).padStart(9)} ${String(counts.unexpected).padStart(11)} ${s.rssMb.toFixed(1).padStart(8)} ${s.heapMb.toFixed(1).padStart(8)}                   ${String(s.fds).padStart(6)} ${String(s.handles).padStart(8)} ${String(s.streams).padStart(8)}`);
  }
  running = false;
  await Promise.all(loops);
  await dispatcher.close();
  // Idle: keep-alive sockets to the runner close on its Keep-Alive hint (5 s − undici's 2 s margin).
  await sleep(4_000);
  const idle = await sample(gateway.adminPort, gateway.collectGarbage);
  log(`idle after the run: rss ${idle.rssMb.toFixed(1)} MB, heap ${idle.heapMb.toFixed(1)} MB, ${idle.fds} fds, ${idle.handles} handles, ${idle.streams} streams (baseline: ${baseline.fds} fds, ${baseline.handles} handles)`);

  // Graceful stop flushes the audit log; then every audited request must be in the file.
  const alive = gateway.child.exitCode === null;
  gateway.collectGarbage.close();
  gateway.child.kill('SIGTERM');
  const exit = await gateway.exited;
  const recorded = new Set(
    (await readFile(join(dir, 'audit.jsonl'), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line).request_id),
  );
  const auditMissing = results.filter((id) => !recorded.has(id));
  const badLogLines = gateway
    .output()
    .split('\n')
    .filter((line) => /"level":"(error|fatal)"/.test(line) || line.includes('unhandled error'));

  // Flatness after warm-up: the first quarter of the run (at least one sample) is warm-up.
  const warm = samples.slice(Math.max(1, Math.floor(samples.length / 4)));
  const third = Math.max(1, Math.floor(warm.length / 3));
  const mean = (list, field) => list.reduce((sum, s) => sum + s[field], 0) / list.length;
  const rssGrowthMb = warm.length >= 2 ? mean(warm.slice(-third), 'rssMb') - mean(warm.slice(0, third), 'rssMb') : 0;
  const heapGrowthMb = warm.length >= 2 ? mean(warm.slice(-third), 'heapMb') - mean(warm.slice(0, third), 'heapMb') : 0;
  const slope = (() => {
    if (warm.length < 2) return 0;
    const mt = mean(warm, 't');
    const mr = mean(warm, 'rssMb');
    const num = warm.reduce((sum, s) => sum + (s.t - mt) * (s.rssMb - mr), 0);
    const den = warm.reduce((sum, s) => sum + (s.t - mt) ** 2, 0);
    return den === 0 ? 0 : (num / den) * 60;
  })();

  const summary = {
    durationS: options.durationMs / 1000,
    concurrency: options.concurrency,
    redis: Boolean(redis),
    requests: counts.total,
    unexpected: counts.unexpected,
    unexpectedExamples: unexpected,
    audited: results.length,
    auditMissing: auditMissing.length,
    auditMissingExamples: auditMissing.slice(0, 10),
    gatewayAliveAtEnd: alive,
    gatewayExit: exit,
    badLogLines: badLogLines.slice(0, 5),
    runnerOpenAtEnd: runner.stats.open,
    baseline,
    idle,
    samples: samples.map((s) => ({ t: Math.round(s.t), rssMb: +s.rssMb.toFixed(1), heapMb: +s.heapMb.toFixed(1), fds: s.fds, handles: s.handles, streams: s.streams })),
    rssGrowthAfterWarmupMb: +rssGrowthMb.toFixed(1),
    heapGrowthAfterWarmupMb: +heapGrowthMb.toFixed(1),
    rssSlopeMbPerMin: +slope.toFixed(2),
  };
  log(
    `${counts.total} requests, ${counts.unexpected} unexpected answers, ${auditMissing.length}/${results.length} audit records missing, ` +
      `RSS growth after warm-up ${summary.rssGrowthAfterWarmupMb} MB (slope ${summary.rssSlopeMbPerMin} MB/min), heap growth ${summary.heapGrowthAfterWarmupMb} MB, ` +
      `gateway exit ${JSON.stringify(exit)}`,
  );
  for (const line of unexpected) log(`  unexpected: ${line}`);
  for (const line of badLogLines.slice(0, 5)) log(`  log: ${line.slice(0, 300)}`);
  if (options.json) process.stdout.write(`${JSON.stringify(summary)}\n`);

  await runner.close();
  await redis?.stop();
  await rm(dir, { recursive: true, force: true });
  const failed = counts.unexpected > 0 || auditMissing.length > 0 || !alive || exit.code !== 0 || badLogLines.length > 0 || runner.stats.open > 0;
  process.exit(failed ? 1 : 0);
}

main().catch((error) => {
  process.stderr.write(`soak failed: ${error.stack ?? error}\n`);
  process.exit(1);
});
