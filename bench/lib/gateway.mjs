// The gateway under test, exactly as production runs it: the built CLI
// (`node dist/cli/main.js serve --config …`) as its own process, Redis key store with the
// bench key cached after the first request, Redis sliding-window limits (a plan far above
// anything the bench can send), audit records to a Redis stream, metrics on the admin
// listener, info logging to a file.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnProcess } from './processes.mjs';

export const BENCH_AGENT = 'bench';
export const BENCH_PLAN = 'bench';
export const BENCH_ACCOUNT = 'bench-account';

/**
 * Writes the config the gateway runs with. Everything not set here takes the documented
 * default (docs/configuration.md); the comments say why each set value differs.
 */
export function writeGatewayConfig({ tmpDir, redisUrl, prefix, stubUrl, upstreamUrls, heartbeat, commandTimeout }) {
  // Several runners (scenario 6): the agent's `upstreams` list instead of `upstream`.
  const upstream = upstreamUrls
    ? `upstreams:\n${upstreamUrls.map((url) => `      - { url: ${url} }`).join('\n')}`
    : `upstream: ${stubUrl}/api/v1`;
  const path = join(tmpDir, 'gateway.yaml');
  const yaml = `# Written by bench/run.mjs: the production configuration of docs/configuration.md.
listen: { host: 127.0.0.1, port: 0 }
admin: { host: 127.0.0.1, port: 0 }
redis:
  url: ${JSON.stringify(redisUrl)}
  # Its own prefix, so a shared REDIS_URL is not disturbed.
  prefix: ${JSON.stringify(prefix)}
${commandTimeout === undefined ? '' : `  command_timeout: ${commandTimeout}\n`}rate_limits: { scope: account, on_store_error: allow }
plans:
  # The shape of the default plans (a minute and a day window, both checked in one Lua
  # round trip), with limits no bench run can reach: nothing is rejected.
  ${BENCH_PLAN}: { windows: [ { requests: 100000000, per: 1m }, { requests: 1000000000, per: 1d } ] }
agents:
  ${BENCH_AGENT}:
    ${upstream}
    timeout: 30s
    max_tokens: 4096
stream:
  # Shorter than the 15s default so the idle streams of scenario 4 carry heartbeats
  # within a hold of tens of seconds.
  heartbeat: ${heartbeat}
  idle_timeout: 60s
  max_duration: 10m
keys:
  store: redis
audit:
  redis_stream: ${JSON.stringify(`${prefix}audit`)}
  # Below the 1,000,000 default only to bound the bench Redis's memory; trimming costs
  # the same at any cap.
  max_len: 100000
  spool: ${JSON.stringify(join(tmpDir, 'audit-spool.jsonl'))}
log:
  level: info
  file: ${JSON.stringify(join(tmpDir, 'gateway.log'))}
`;
  writeFileSync(path, yaml);
  return path;
}

/**
 * Creates the bench key in the configured (Redis) store through the library the CLI uses.
 * `mcp`: the key's MCP scope (the `mcp` variation's server), left out for builds without MCP.
 */
export async function createBenchKey({ repoRoot, configPath, mcp }) {
  const dist = (path) => pathToFileURL(join(repoRoot, 'dist', path)).href;
  const { loadConfig } = await import(dist('config/load-config.js'));
  // Builds from before issue 19 keep key administration in dist/auth/ and have no
  // openCliKeyStore; the A/B scripts measure such builds too.
  const { existsSync } = await import('node:fs');
  const current = existsSync(join(repoRoot, 'dist', 'keys', 'key-service.js'));
  const { KeyService } = await import(dist(`${current ? 'keys' : 'auth'}/key-service.js`));
  const openStore = current
    ? (await import(dist('cli/keys.js'))).openCliKeyStore
    : async (config) => {
        const { openKeyStore } = await import(dist('auth/open-key-store.js'));
        const { silentLogger } = await import(dist('logger.js'));
        return openKeyStore(config, { logger: silentLogger, subscribe: false, waitForConnectionMs: 5_000 });
      };
  const config = await loadConfig(configPath);
  const store = await openStore(config);
  try {
    const { rawKey, record } = await new KeyService({ store, config }).createKey({
      account: BENCH_ACCOUNT,
      plan: BENCH_PLAN,
      agents: [BENCH_AGENT],
      name: 'npm run bench',
      ...(mcp === undefined ? {} : { mcp }),
    });
    return { rawKey, keyId: record.keyId };
  } finally {
    await store.close();
  }
}

/**
 * @returns {Promise<{ handle, pid: number, url: string, adminUrl: string, stop: () => Promise<void> }>}
 */
/** What the gateway prints once it takes traffic: its port, then the admin port. */
export const GATEWAY_READY_PATTERN = /agent-gateway listening on https?:\/\/[^\s:]+:(\d+) \(admin :(\d+)/;

/** The environment a bench gateway runs with. */
export function gatewayEnvironment(redisUrl) {
  const env = { ...process.env, REDIS_URL: redisUrl, NODE_ENV: 'production', LOG_FORMAT: 'json' };
  // PORT would override listen.port (docs/configuration.md): the bench picks its own ports.
  delete env.PORT;
  return env;
}

/** `nodePath`: the runtime to run it on (`--node`, or a build's `node=` spec); the bench's own by default. */
/** `extraEnv`: added to the gateway's environment (scenario 4's standalone instances: MALLOC_ARENA_MAX). */
export async function startGatewayProcess({ repoRoot, configPath, redisUrl, tmpDir, fdLimit, name = 'gateway', cpuProfDir = null, nodeArgs: extraNodeArgs = [], serveArgs = [], nodePath = process.execPath, startTimeoutMs = undefined, extraEnv = {} }) {
  const env = { ...gatewayEnvironment(redisUrl), ...extraEnv };
  const nodeArgs = [...(cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : []), ...extraNodeArgs];
  const handle = await spawnProcess({
    name,
    command: nodePath,
    args: [...nodeArgs, join(repoRoot, 'dist/cli/main.js'), 'serve', '--config', configPath, ...serveArgs],
    env,
    fdLimit,
    readyPattern: GATEWAY_READY_PATTERN,
    logFile: join(tmpDir, `${name}.out`),
    // A cluster (--workers) forks and readies every worker first; on a shared machine at a
    // load average of 30 that took longer than the 20 s default.
    startTimeoutMs: 90_000,
    // The gateway drains in-flight work on SIGTERM; the bench stops it between scenarios
    // with nothing in flight, so a long wait means something is wrong.
    stopGraceMs: 10_000,
    ...(startTimeoutMs === undefined ? {} : { startTimeoutMs }),
  });
  const port = Number(handle.match[1]);
  const adminPort = Number(handle.match[2]);
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  await waitReady(adminUrl);
  return { handle, pid: handle.pid, url: `http://127.0.0.1:${port}`, adminUrl, stop: () => handle.stop() };
}

async function waitReady(adminUrl, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`${adminUrl}/readyz`);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`gateway not ready (${adminUrl}/readyz) within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * One Prometheus sample's value from the admin listener's /metrics, or null. With
 * `serve --workers N` each worker's sample carries a worker label: they are summed.
 */
export async function scrapeMetric(adminUrl, name) {
  try {
    const res = await fetch(`${adminUrl}/metrics`);
    const text = await res.text();
    const matches = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'gm'))];
    return matches.length ? matches.reduce((sum, m) => sum + Number(m[1]), 0) : null;
  } catch {
    return null;
  }
}
