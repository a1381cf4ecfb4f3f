// Brings up everything the scenarios drive, on loopback: Redis, the stub runner, the gateway
// (production config, key created beforehand), and the references (nginx when installed,
// bare node:http + http-proxy, bare node:http + undici) and the peer gateways (bench/peers,
// issue 26; skipped with a note when they cannot install or start). Each is its own
// process, started the same way, so they compete for the two cores on equal terms.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startBenchRedis } from './bench-redis.mjs';
import { applyConfigVariations } from './build-specs.mjs';
import { BENCH_ACCOUNT, BENCH_AGENT, createBenchKey, startGatewayProcess, writeGatewayConfig } from './gateway.mjs';
import { REQUEST_BODY } from './load-tools.mjs';
import { startNginx } from './nginx.mjs';
import { startPeers } from './peers.mjs';
import { startNodeProgram, startStubRunner } from './processes.mjs';
import { CHAT_RESPONSE } from '../reference/stub-runner.mjs';

/** Table order: the gateway, the peers users compare it with, then the references. */
export const TARGET_ORDER = ['gateway', 'fastify-stack', 'portkey', 'stub-direct', 'nginx', 'bare-undici', 'bare-http-proxy'];
/** The `--node` gateways (gateway-node22 …) come right after the default one, in the order given. */
const orderOf = (name, runtimes) => {
  const i = TARGET_ORDER.indexOf(name);
  return i >= 0 ? i : (1 + runtimes.findIndex((r) => r.name === name)) / (runtimes.length + 1);
};

const STUB_CHAT_PATH = '/api/v1/chat';
const STUB_STREAM_PATH = '/api/v1/chat/stream';

/**
 * @param {object} args
 * @param {{ name: string, version: string, path: string }[]} [args.runtimes] `--node`: one more
 *   gateway per runtime, same Redis, key and stub, its own config dir (log, spool)
 * @returns {Promise<{ redis, stub, gateway, targets: object[], notes: string[], startGateway: (opts?) => Promise<object> }>}
 */
export async function startEnvironment({ repoRoot, tmpDir, fdLimit, nginx, peers: withPeers = true, heartbeat, log, runtimes = [], limitVariants = [], usageRollups = true }) {
  const notes = [];
  const ref = (name) => join(repoRoot, 'bench', 'reference', name);

  const redis = await startBenchRedis({ tmpDir, fdLimit });
  log(`redis: ${redis.shared ? `REDIS_URL (shared: commands of other clients also count in scenario 5)` : `redis-server ${redis.version} child`} at ${redis.url}`);
  if (redis.shared) notes.push('REDIS_URL was set: the bench used that shared Redis, so scenario 5 counts may include other clients\' commands.');

  const stub = await startStubRunner({ tmpDir, fdLimit });
  const stubUrl = stub.url;

  const prefix = `agentgw-bench-${process.pid}:`;
  const configPath = writeGatewayConfig({ tmpDir, redisUrl: redis.url, prefix, stubUrl, heartbeat });
  if (usageRollups === false) applyConfigVariations(configPath, ['no-usage-rollups']);
  const key = await createBenchKey({ repoRoot, configPath });
  const gatewayHeaders = { authorization: `Bearer ${key.rawKey}` };
  const startGateway = (opts = {}) => startGatewayProcess({ repoRoot, configPath, redisUrl: redis.url, tmpDir, fdLimit, ...opts });
  const gateway = await startGateway();
  log(`gateway: pid ${gateway.pid} at ${gateway.url} (admin ${gateway.adminUrl}), key ${key.keyId}`);

  const runtimeGateways = [];
  for (const runtime of runtimes) {
    const dir = join(tmpDir, runtime.name);
    mkdirSync(dir, { recursive: true });
    const runtimeConfig = writeGatewayConfig({ tmpDir: dir, redisUrl: redis.url, prefix, stubUrl, heartbeat });
    const started = await startGatewayProcess({ repoRoot, configPath: runtimeConfig, redisUrl: redis.url, tmpDir: dir, fdLimit, name: runtime.name, nodePath: runtime.path });
    runtimeGateways.push({ runtime, gateway: started });
    log(`${runtime.name}: node ${runtime.version} (${runtime.path}), pid ${started.pid} at ${started.url}`);
  }

  const plain = (name, url, pids) => ({ name, url, chatPath: STUB_CHAT_PATH, streamPath: STUB_STREAM_PATH, headers: {}, pids });
  const targets = [plain('stub-direct', stubUrl, () => [])];
  const references = [];

  if (nginx) {
    const proxy = await startNginx({ nginx, tmpDir, upstreamPort: stub.port, workerFdLimit: fdLimit });
    references.push(proxy.handle);
    targets.push(plain('nginx', proxy.url, proxy.pids));
    log(`nginx ${nginx.version}: ${proxy.url}`);
  }
  for (const [name, script] of [['bare-undici', 'bare-undici-proxy.mjs'], ['bare-http-proxy', 'bare-http-proxy.mjs']]) {
    const proxy = await startNodeProgram({ name, script: ref(script), args: ['--upstream', stubUrl, '--port', '0'], tmpDir, fdLimit });
    references.push(proxy.handle);
    targets.push(plain(name, proxy.url, () => [proxy.pid]));
  }

  /** Each peer: ran, or skipped with the reason (printed, and kept in the result file). */
  let peerStatus = [];
  if (withPeers) {
    const peers = await startPeers({ repoRoot, tmpDir, fdLimit, redis, stubUrl, rawKey: key.rawKey, prefix, account: BENCH_ACCOUNT, log });
    peerStatus = peers.status;
    for (const target of peers.targets) {
      const handle = peers.handles[peers.targets.indexOf(target)];
      try {
        await checkTarget(target);
      } catch (error) {
        // A peer that starts but answers wrongly is no result either: left out, said why.
        const s = peerStatus.find((p) => p.name === target.name);
        Object.assign(s, { ran: false, reason: `started but failed the answer check: ${String(error.message).slice(0, 300)}` });
        log(`peer ${target.name}: skipped — ${s.reason}`);
        await handle.stop();
        continue;
      }
      references.push(handle);
      targets.push(target);
    }
    for (const s of peerStatus) if (!s.ran) notes.push(`peer ${s.name} skipped: ${s.reason}`);
  } else {
    notes.push('--no-peers: the peer gateways were skipped.');
  }

  const gatewayTarget = {
    name: 'gateway',
    url: gateway.url,
    chatPath: `/agents/${BENCH_AGENT}/api/v1/chat`,
    streamPath: `/agents/${BENCH_AGENT}/api/v1/chat/stream`,
    headers: gatewayHeaders,
    pids: () => [gateway.pid],
    adminUrl: gateway.adminUrl,
  };
  targets.push(gatewayTarget);
  for (const { runtime, gateway: g } of runtimeGateways) {
    targets.push({ ...gatewayTarget, name: runtime.name, url: g.url, pids: () => [g.pid], adminUrl: g.adminUrl, nodeVersion: runtime.version });
  }
  targets.sort((a, b) => orderOf(a.name, runtimes) - orderOf(b.name, runtimes));

  // --limit-variants: the same gateway with one config variation each (its own directory,
  // Redis prefix and key), for scenarios 1 and 5 only.
  const limitTargets = [];
  const limitGateways = [];
  for (const variant of limitVariants) {
    const dir = join(tmpDir, `gateway-${variant}`);
    mkdirSync(dir, { recursive: true });
    const variantConfig = writeGatewayConfig({ tmpDir: dir, redisUrl: redis.url, prefix: `${prefix}${variant}:`, stubUrl, heartbeat });
    applyConfigVariations(variantConfig, [variant]);
    const variantKey = await createBenchKey({ repoRoot, configPath: variantConfig });
    const variantGateway = await startGatewayProcess({ repoRoot, configPath: variantConfig, redisUrl: redis.url, tmpDir: dir, fdLimit, name: `gateway-${variant}` });
    limitGateways.push(variantGateway);
    log(`gateway-${variant}: pid ${variantGateway.pid} at ${variantGateway.url}`);
    // The A2A variant answers the stub's reply in the gateway's A2A shape (docs/a2a.md): same text, its own fields.
    const a2aAnswer = variant === 'a2a' ? { chatAnswerMatches: (text) => JSON.parse(text).response === CHAT_RESPONSE.response } : {};
    limitTargets.push({ ...gatewayTarget, ...a2aAnswer, name: `gateway-${variant}`, url: variantGateway.url, headers: { authorization: `Bearer ${variantKey.rawKey}` }, pids: () => [variantGateway.pid], adminUrl: variantGateway.adminUrl });
  }

  for (const target of [...targets, ...limitTargets]) if (!target.peer) await checkTarget(target);

  return {
    redis,
    stub,
    gateway,
    gatewayTarget,
    gatewayHeaders,
    startGateway,
    /** The bench gateway's config written into `dir` (same Redis, prefix, key and stub): for extra instances. */
    writeGatewayConfig: (dir) => writeGatewayConfig({ tmpDir: dir, redisUrl: redis.url, prefix, stubUrl, heartbeat }),
    targets,
    limitTargets,
    peerStatus,
    notes,
    /** Stops the references, the `--node` gateways and the limit variants (scenario 4 wants the cores and memory to itself). */
    stopReferences: () => Promise.all([...runtimeGateways.map(({ gateway: g }) => g.stop()), ...references.map((handle) => handle.stop()), ...limitGateways.map((handle) => handle.stop())]),
    /**
     * In dependency order: the gateway first (it flushes audit records and last-used times
     * to Redis as it stops), then the proxies, the stub, and Redis last.
     */
    stop: async () => {
      await Promise.all([gateway, ...runtimeGateways.map((r) => r.gateway)].map((g) => g.stop()));
      await Promise.all([...references, ...limitGateways].map((handle) => handle.stop()));
      await stub.stop();
      await redis.close();
    },
  };
}

/** A target that answers wrongly fast is not a result: one exchange of each kind first. */
async function checkTarget(target) {
  const headers = { 'content-type': 'application/json', ...target.headers };
  const chat = await fetch(`${target.url}${target.chatPath}`, { method: 'POST', headers, body: target.chatBody ?? REQUEST_BODY });
  const text = await chat.text();
  const matches = target.chatAnswerMatches ?? ((t) => t === JSON.stringify(CHAT_RESPONSE));
  if (chat.status !== 200 || !matches(text)) {
    throw new Error(`${target.name}: POST ${target.chatPath} answered ${chat.status} ${text.slice(0, 300)}`);
  }
  const stream = await fetch(`${target.url}${target.streamPath}`, {
    method: 'POST',
    headers: { ...headers, 'x-bench-stream': 'tokens=3&intervalMs=5' },
    body: target.streamBody ?? REQUEST_BODY,
  });
  const events = await stream.text();
  const seqs = [...events.matchAll(/"seq":(\d+)|seq=(\d+)/g)].map((m) => Number(m[1] ?? m[2]));
  if (stream.status !== 200 || seqs.join(',') !== '0,1,2' || !isStreamEnd(events)) {
    throw new Error(`${target.name}: POST ${target.streamPath} answered ${stream.status} ${events.slice(0, 300)}`);
  }
}

/** The agent API ends a stream with `event: done`; OpenAI's shape with `data: [DONE]`. */
export function isStreamEnd(text) {
  return text.includes('event: done') || text.includes('data: [DONE]');
}
