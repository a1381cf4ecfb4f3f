// Redis commands per request of the bench gateway with and without token budgets and a stream
// cap (docs/decisions/0020), counted where the machine's load cannot move them: one request
// at a time (no coalescing, whose batches depend on the rate), one gateway at a time (no other
// gateway's background writes in the count), INFO commandstats before and after. Scenario 5 of
// the suite counts under full load instead, where the figures drift with the rate.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { commandStatsDelta, startBenchRedis } from '../lib/bench-redis.mjs';
import { applyConfigVariations } from '../lib/build-specs.mjs';
import { BENCH_AGENT, createBenchKey, startGatewayProcess, writeGatewayConfig } from '../lib/gateway.mjs';
import { REQUEST_BODY } from '../lib/load-tools.mjs';
import { startStubRunner, stopAll } from '../lib/processes.mjs';

const repoRoot = resolve(import.meta.dirname, '..', '..');

export const USAGE = `node bench/run.mjs limit-commands [--requests 400] [--streams 200] [variant ...]

  Redis commands per request (INFO commandstats), one request at a time, one gateway at a time.
  --requests N   JSON requests counted per variant (default 400)
  --streams N    streams counted per variant (default 200)
  variant ...    bench/lib/build-specs.mjs config variations, each its own gateway
                 (default: plain budgets budgets-cap; plain = the bench config as it is)
`;

export async function run(argv) {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { requests: { type: 'string', default: '400' }, streams: { type: 'string', default: '200' } } });
  const requests = Number(values.requests);
  const streams = Number(values.streams);
  const variants = positionals.length > 0 ? positionals : ['plain', 'budgets', 'budgets-cap'];

  const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-limit-commands-'));
  const redis = await startBenchRedis({ tmpDir, fdLimit: 20_000 });
  const { url: stubUrl } = await startStubRunner({ tmpDir });

  /** One at a time; a stream is read to its end (its done event) before the next starts. */
  async function sequential(url, headers, path, count, extraHeaders = {}) {
    for (let i = 0; i < count; i += 1) {
      const res = await request(`${url}${path}`, { method: 'POST', headers: { ...headers, ...extraHeaders, 'content-type': 'application/json' }, body: REQUEST_BODY });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}`);
    }
  }

  /** Commands per request over `count` requests, after the gateway's batched writes settled. */
  async function counted(run, count) {
    const before = await redis.commandStats();
    await run();
    // Audit batches (50 ms), charges and releases (next turn) land after the last answer.
    await new Promise((r) => setTimeout(r, 1_000));
    const delta = commandStatsDelta(before, await redis.commandStats());
    return Object.fromEntries(Object.entries(delta).map(([name, calls]) => [name, Math.round((calls / count) * 1000) / 1000]));
  }

  const results = {};
  try {
    for (const variant of variants) {
      const dir = mkdtempSync(join(tmpDir, `${variant}-`));
      const configPath = writeGatewayConfig({ tmpDir: dir, redisUrl: redis.url, prefix: `limit-commands-${variant}:`, stubUrl, heartbeat: '5s' });
      if (variant !== 'plain') applyConfigVariations(configPath, [variant]);
      const key = await createBenchKey({ repoRoot, configPath });
      const gateway = await startGatewayProcess({ repoRoot, configPath, redisUrl: redis.url, tmpDir: dir, fdLimit: 20_000, name: `gateway-${variant}`, startTimeoutMs: 120_000 });
      const headers = { authorization: `Bearer ${key.rawKey}` };
      const chat = `/agents/${BENCH_AGENT}/api/v1/chat`;
      const stream = `/agents/${BENCH_AGENT}/api/v1/chat/stream`;
      const streamHeaders = { 'x-bench-stream': 'tokens=3&intervalMs=1' };
      // Warm-up: the key cached, the scripts loaded.
      await sequential(gateway.url, headers, chat, 20);
      await sequential(gateway.url, headers, stream, 20, streamHeaders);
      results[variant] = {
        json: await counted(() => sequential(gateway.url, headers, chat, requests), requests),
        stream: await counted(() => sequential(gateway.url, headers, stream, streams, streamHeaders), streams),
      };
      await gateway.stop();
    }
  } finally {
    await stopAll();
    await redis.close();
    rmSync(tmpDir, { recursive: true, force: true });
  }

  const names = [...new Set(Object.values(results).flatMap((r) => [...Object.keys(r.json), ...Object.keys(r.stream)]))].sort();
  const header = ['command', ...variants.flatMap((v) => [`${v} json`, `${v} stream`])];
  const rows = names.map((name) => [name, ...variants.flatMap((v) => [String(results[v].json[name] ?? 0), String(results[v].stream[name] ?? 0)])]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells) => cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  process.stdout.write(`Redis commands per request, one request at a time (${requests} JSON, ${streams} streams per variant)\n`);
  process.stdout.write(`${line(header)}\n${line(widths.map((w) => '-'.repeat(w)))}\n${rows.map(line).join('\n')}\n`);
}
