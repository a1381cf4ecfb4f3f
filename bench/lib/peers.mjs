// The peer gateways of `npm run bench` (issue 26): what users compare agent-gateway with.
// They live in a bench-only package, bench/peers/ (own package.json and lockfile, never a
// dependency of the product), installed on first use with `npm ci --prefix bench/peers`.
// A peer that cannot be installed or started is skipped with a note saying why; the
// scenarios then run without it and its verdicts say n/a.
//
//   fastify-stack  bench/peers/fastify-gateway.mjs: fastify + @fastify/reply-from +
//                  @fastify/rate-limit (Redis store) + bearer lookup in Redis + pino log
//   portkey        @portkey-ai/gateway (its own server, headless), provider openai with a
//                  custom host: the stub's OpenAI-shaped route; no auth, no limits
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { freePort } from '../../scripts/free-port.mjs';
import { spawnProcess } from './processes.mjs';

export const PEER_NAMES = ['fastify-stack', 'portkey'];

/** The chat request in OpenAI's shape, same message and sampling fields as REQUEST_BODY. */
const OPENAI_CHAT_BODY = JSON.stringify({
  model: 'stub-runner-1',
  messages: [{ role: 'user', content: 'Hello, what can you do?' }],
  temperature: 0.7,
  max_tokens: 256,
  user: 'u-1',
});
const OPENAI_STREAM_BODY = JSON.stringify({ ...JSON.parse(OPENAI_CHAT_BODY), stream: true });

function peersDir(repoRoot) {
  return join(repoRoot, 'bench', 'peers');
}

/** Installed and not older than the lockfile (npm ci writes node_modules/.package-lock.json). */
function installed(dir) {
  const marker = join(dir, 'node_modules', '.package-lock.json');
  if (!existsSync(marker)) return false;
  return statSync(marker).mtimeMs >= statSync(join(dir, 'package-lock.json')).mtimeMs;
}

/**
 * Installs bench/peers once (`npm ci --prefix bench/peers`). Never throws.
 * @returns {Promise<{ ok: boolean, reason?: string }>}
 */
export async function ensurePeersInstalled({ repoRoot, log }) {
  const dir = peersDir(repoRoot);
  if (installed(dir)) return { ok: true };
  log(`peers: installing bench/peers (npm ci --prefix bench/peers, first use)…`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  return new Promise((resolve) => {
    execFile(
      npm,
      ['ci', '--prefix', dir, '--no-audit', '--no-fund', '--loglevel', 'error'],
      { timeout: 300_000, maxBuffer: 4 << 20 },
      (error, stdout, stderr) => {
        if (!error && installed(dir)) resolve({ ok: true });
        else resolve({ ok: false, reason: `npm ci --prefix bench/peers failed: ${(`${stderr}${stdout}`.trim().split('\n').pop() ?? error?.message ?? '').slice(0, 300)}` });
      },
    );
  });
}

function childEnv() {
  const env = { ...process.env, NODE_ENV: 'production' };
  delete env.PORT;
  return env;
}

async function startFastifyStack({ dir, tmpDir, fdLimit, redis, stubUrl, rawKey, prefix, account }) {
  // The peer's key record, in the shape its preHandler reads.
  const { peerKeyName } = await import(pathToFileURL(join(dir, 'peer-key.mjs')).href);
  const client = new Redis(redis.url, { maxRetriesPerRequest: 2 });
  try {
    await client.set(peerKeyName(prefix, rawKey), JSON.stringify({ account }));
  } finally {
    client.disconnect();
  }
  const handle = await spawnProcess({
    name: 'fastify-stack',
    command: process.execPath,
    args: [join(dir, 'fastify-gateway.mjs'), '--upstream', stubUrl, '--redis', redis.url, '--key-prefix', prefix, '--log', join(tmpDir, 'fastify-stack.log'), '--port', '0'],
    env: childEnv(),
    fdLimit,
    readyPattern: /^listening (\d+)$/m,
    logFile: join(tmpDir, 'fastify-stack.out'),
  });
  return {
    handle,
    target: {
      name: 'fastify-stack',
      peer: true,
      url: `http://127.0.0.1:${handle.match[1]}`,
      chatPath: '/api/v1/chat',
      streamPath: '/api/v1/chat/stream',
      headers: { authorization: `Bearer ${rawKey}` },
      pids: () => [handle.pid],
    },
  };
}

async function startPortkey({ dir, tmpDir, fdLimit, stubUrl }) {
  const server = join(dir, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
  if (!existsSync(server)) throw new Error(`${server} is missing`);
  const port = await freePort();
  const handle = await spawnProcess({
    name: 'portkey',
    command: process.execPath,
    args: [server, `--port=${port}`, '--headless'],
    env: childEnv(),
    fdLimit,
    readyPattern: /Ready for connections/,
    logFile: join(tmpDir, 'portkey.out'),
  });
  return {
    handle,
    target: {
      name: 'portkey',
      peer: true,
      url: `http://127.0.0.1:${port}`,
      chatPath: '/v1/chat/completions',
      streamPath: '/v1/chat/completions',
      chatBody: OPENAI_CHAT_BODY,
      streamBody: OPENAI_STREAM_BODY,
      // What its route needs: the provider, where the "provider" is (the stub's OpenAI
      // route), a provider key (the stub ignores it), and the stub's per-stream
      // parameters passed through.
      headers: {
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${stubUrl}/v1`,
        authorization: 'Bearer sk-bench-not-checked',
        'x-portkey-forward-headers': 'x-bench-stream',
      },
      /** Portkey answers the provider's JSON as it came; the stub's is fixed. */
      chatAnswerMatches: (text) => text.includes('"object":"chat.completion"') && text.includes('"finish_reason":"stop"'),
      pids: () => [handle.pid],
    },
  };
}

/**
 * Starts every peer it can. Never throws: a peer that cannot start is left out with a note.
 * @returns {Promise<{ targets: object[], handles: object[], status: { name: string, ran: boolean, reason: string | null, version: string | null }[] }>}
 */
export async function startPeers({ repoRoot, tmpDir, fdLimit, redis, stubUrl, rawKey, prefix, account, log }) {
  const dir = peersDir(repoRoot);
  const status = [];
  const targets = [];
  const handles = [];
  const install = await ensurePeersInstalled({ repoRoot, log });
  const starters = { 'fastify-stack': startFastifyStack, portkey: startPortkey };
  const versions = { 'fastify-stack': 'fastify', portkey: '@portkey-ai/gateway' };
  for (const name of PEER_NAMES) {
    if (!install.ok) {
      status.push({ name, ran: false, reason: install.reason, version: null });
      continue;
    }
    try {
      const started = await starters[name]({ dir, tmpDir, fdLimit, redis, stubUrl, rawKey, prefix, account });
      handles.push(started.handle);
      targets.push(started.target);
      status.push({ name, ran: true, reason: null, version: packageVersion(dir, versions[name]) });
    } catch (error) {
      status.push({ name, ran: false, reason: String(error.message ?? error).split('\n')[0].slice(0, 300), version: null });
    }
  }
  for (const s of status) log(s.ran ? `peer ${s.name} (${versions[s.name]} ${s.version}): started` : `peer ${s.name}: skipped — ${s.reason}`);
  return { targets, handles, status };
}

function packageVersion(dir, name) {
  try {
    // Sync read: once per peer, before any load.
    return JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
}
