// Rapid reset against the TLS listener (issue 33, finding 2; decision 0046): 20 HTTP/2
// connections × 5 s of (HEADERS, DATA, RST_STREAM) with a valid key, from a process of their
// own, while another client sends ordinary /chat requests over HTTP/1.1 one at a time and the
// admin listener is probed every 100 ms. Prints that client's latency, the admin probes', the
// gateway's CPU during the attack and what the gateway counted. `--build DIR` measures another
// built checkout (e.g. /work/base-main, with --plain-tls: a build without the HTTP/2 limits).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startBenchRedis } from '../lib/bench-redis.mjs';
import { BENCH_AGENT, createBenchKey, startGatewayProcess, writeGatewayConfig } from '../lib/gateway.mjs';
import { REQUEST_BODY } from '../lib/load-tools.mjs';
import { cpuMs } from '../lib/proc-stats.mjs';
import { startStubRunner, stopAll } from '../lib/processes.mjs';
import { percentiles, round } from '../lib/stats.mjs';

export const USAGE = `node bench/run.mjs rapid-reset [--connections 20] [--seconds 5] [--build DIR] [--plain-tls]

  Rapid reset (HEADERS, DATA, RST_STREAM with a valid key) on HTTP/2 connections, while one
  HTTP/1.1 client sends /chat requests one at a time and the admin listener is probed.
  --connections N  attacking HTTP/2 connections (default 20)
  --seconds S      attack length (default 5)
  --build DIR      the built checkout to run (default: this one)
  --plain-tls      leave listen.tls's HTTP/2 limits out of the config (builds without them)
`;

const CHAT = `/agents/${BENCH_AGENT}/api/v1/chat`;

export async function run(argv) {
  const { values } = parseArgs({ args: argv, options: { connections: { type: 'string', default: '20' }, seconds: { type: 'string', default: '5' }, build: { type: 'string' }, 'plain-tls': { type: 'boolean', default: false } } });
  const repoRoot = resolve(values.build ?? resolve(import.meta.dirname, '..', '..'));
  const connections = Number(values.connections);
  const seconds = Number(values.seconds);
  const tmpDir = mkdtempSync(join(tmpdir(), 'agentgw-rapid-reset-'));
  try {
    const certFile = join(tmpDir, 'cert.pem');
    const keyFile = join(tmpDir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
    const redis = await startBenchRedis({ tmpDir, fdLimit: 20_000 });
    const { url: stubUrl } = await startStubRunner({ tmpDir });
    const configPath = writeGatewayConfig({ tmpDir, redisUrl: redis.url, prefix: 'rr:', stubUrl, heartbeat: '5s' });
    const tls = `tls: { cert: ${JSON.stringify(certFile)}, key: ${JSON.stringify(keyFile)} }`;
    writeFileSync(configPath, readFileSync(configPath, 'utf8').replace('listen: { host: 127.0.0.1, port: 0 }', `listen: { host: 127.0.0.1, port: 0, ${tls} }`));
    const gateway = await startGatewayProcess({ repoRoot, configPath, redisUrl: redis.url, tmpDir, fdLimit: 20_000 });
    const { rawKey } = await createBenchKey({ repoRoot, configPath });
    const url = gateway.url.replace('http:', 'https:');
    const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${rawKey}` };
    const chat = async () => {
      const started = performance.now();
      const res = await request(`${url}${CHAT}`, { method: 'POST', headers, body: REQUEST_BODY, dispatcher });
      await res.body.text();
      return { ms: performance.now() - started, status: res.statusCode };
    };
    for (let i = 0; i < 50; i += 1) await chat(); // warm
    const quiet = [];
    for (let i = 0; i < 100; i += 1) quiet.push((await chat()).ms);

    const cpuBefore = cpuMs(gateway.pid);
    const attacker = spawn(process.execPath, [join(import.meta.dirname, '..', 'lib', 'rapid-reset-client.mjs'), url, rawKey, CHAT, String(connections), String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let attackerOut = '';
    attacker.stdout.on('data', (chunk) => (attackerOut += chunk));
    const attackDone = new Promise((resolveDone) => attacker.once('exit', resolveDone));
    let attacking = true;
    void attackDone.then(() => (attacking = false));
    const during = [];
    const failed = [];
    const admin = [];
    const adminFailed = [];
    const probeAdmin = async () => {
      while (attacking) {
        const started = performance.now();
        try {
          const res = await fetch(`${gateway.adminUrl}/healthz`, { signal: AbortSignal.timeout(5_000) });
          await res.arrayBuffer();
          admin.push(performance.now() - started);
        } catch {
          adminFailed.push(performance.now() - started);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const victim = async () => {
      while (attacking) {
        try {
          const { ms, status } = await chat();
          if (status === 200) during.push(ms);
          else failed.push(status);
        } catch {
          failed.push('error');
        }
      }
    };
    await Promise.all([probeAdmin(), victim(), attackDone]);
    const cpuDuring = cpuMs(gateway.pid) - cpuBefore;
    const metrics = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
    const sample = (name) => [...metrics.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'gm'))].reduce((sum, m) => sum + Number(m[1]), 0);
    const pct = (values) => Object.fromEntries(Object.entries(percentiles(values, [50, 99])).map(([k, v]) => [k, round(v, 1)]));
    const result = {
      node: process.version,
      build: repoRoot,
      attack: { connections, seconds, ...JSON.parse(attackerOut.trim() || '{}') },
      client_quiet_ms: pct(quiet),
      client_during: { answered: during.length, failed: failed.length, ms: pct(during), max_ms: round(Math.max(...during), 1) },
      admin_during: { answered: admin.length, failed: adminFailed.length, max_ms: round(Math.max(...admin), 1) },
      gateway_cpu_ms_during_attack: cpuDuring,
      gateway_counted: {
        streams_cancelled: sample('agentgw_streams_cancelled_total'),
        sessions_refused: sample('agentgw_connections_refused_total'),
        chat_requests: sample('agentgw_requests_total'),
      },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    await dispatcher.close();
  } finally {
    await stopAll();
    rmSync(tmpDir, { recursive: true, force: true });
  }
}
