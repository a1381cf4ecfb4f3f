// Changes made through one gateway's admin API reach another gateway PROCESS (docs/admin-api.md
// "Consistency": within 1 s on a quiet machine): two `serve` processes sharing Redis (pub/sub
// invalidation) and two sharing one key file (watch). The key cache TTL is an hour, far beyond
// the test's own timeout, so a change that reaches the second gateway at all was carried by
// the invalidation; the test waits for it as a condition and prints how long each took (a
// loaded machine may stretch any of them, so no bound on speed is asserted). Created, re-scoped, rotated (with the old key
// working until its grace ends) and revoked keys are all followed.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat } from '../helpers/gateway.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { OpenApiCheck } from '../helpers/openapi-check.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;
/** A guard against a hang, not a speed bound: far inside the hour-long cache TTL. */
const REACH_BOUND_MS = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const admin = new OpenApiCheck('admin');

let upstream: FakeUpstream;
let redis: TestRedis;
let dir: string;
let gateways: GatewayProcess[] = [];

beforeAll(async () => {
  [upstream, redis, dir] = await Promise.all([startFakeUpstream(), startRedis(), mkdtemp(join(tmpdir(), 'agentgw-e2e-admin-'))]);
});

afterEach(async () => {
  await Promise.all(gateways.map((g) => g.stop('SIGKILL')));
  gateways = [];
});

afterAll(async () => {
  await upstream?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function config(name: string, store: 'redis' | 'file', prefix: string): Record<string, unknown> {
  return {
    ...(store === 'redis' ? { redis: { url: redis.url, prefix, command_timeout: '1s' } } : {}),
    admin: { tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
    agents: { support: { upstream: upstream.baseUrl }, sales: { upstream: upstream.baseUrl } },
    keys: { store, file: join(dir, `${prefix}keys.json`), cache_ttl: '1h' },
    audit: {
      file: join(dir, `${name}-audit.jsonl`),
      spool: join(dir, `${name}-spool.jsonl`),
      admin_file: join(dir, `${name}-admin-audit.jsonl`),
      usage_dir: join(dir, `${name}-usage`),
    },
    shutdown_grace: '1s',
  };
}

async function api(gateway: GatewayProcess, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const answer = await admin.fetch(`${gateway.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(answer.status, answer.text).toBeLessThan(300);
  return answer.body as Record<string, unknown>;
}

async function chat(gateway: GatewayProcess, key: string, agent = 'support'): Promise<string> {
  const response = await postChat(gateway.url, `/agents/${agent}/api/v1/chat`, key, { message: 'hi' });
  const body = (await response.json()) as { error?: { type: string } };
  return response.status === 200 ? 'ok' : body.error!.type;
}

/** Polls `gateway` until `chat` answers `expected`; returns how long after `sinceMs` that was. */
async function reached(gateway: GatewayProcess, key: string, agent: string, expected: string, sinceMs: number): Promise<number> {
  for (;;) {
    const answer = await chat(gateway, key, agent);
    const at = performance.now() - sinceMs;
    if (answer === expected) return at;
    if (at > REACH_BOUND_MS) throw new Error(`${gateway.url} still answers ${answer}, not ${expected}`);
    await sleep(20);
  }
}

describe.each(['redis', 'file'] as const)('admin API changes reach a second gateway process (%s store)', (store) => {
  it('create, re-scope, rotate with grace, revoke', async () => {
    const prefix = `e2eadm${randomUUID().slice(0, 6)}:`;
    gateways = await Promise.all([startGatewayProcess(dir, `${store}-a`, config(`${store}-a`, store, prefix)), startGatewayProcess(dir, `${store}-b`, config(`${store}-b`, store, prefix))]);
    const [a, b] = gateways as [GatewayProcess, GatewayProcess];

    let t = performance.now();
    const created = await api(a, 'POST', '/admin/v1/keys', { account: 'acme', plan: 'scale', agents: ['support', 'sales'] });
    const key = created.key as string;
    const timings: Record<string, number> = {};
    timings.create = await reached(b, key, 'sales', 'ok', t);
    expect(await chat(b, key, 'sales')).toBe('ok'); // cached on b now

    t = performance.now();
    await api(a, 'PATCH', `/admin/v1/keys/${created.key_id as string}`, { agents: ['support'] });
    timings.rescope = await reached(b, key, 'sales', 'agent_not_allowed', t);
    expect(await chat(b, key, 'support')).toBe('ok');

    t = performance.now();
    const rotated = await api(b, 'POST', `/admin/v1/keys/${created.key_id as string}/rotate`, { grace: '2s' });
    const newKey = rotated.key as string;
    timings.rotateNew = await reached(a, newKey, 'support', 'ok', t);
    expect(await chat(a, key, 'support')).toBe('ok'); // old key inside its grace
    const graceEndsMs = Date.parse((rotated.previous as { expires_at: string }).expires_at);
    await sleep(Math.max(0, graceEndsMs - Date.now()));
    const graceOver = performance.now();
    timings.graceEnd = Math.min(await reached(a, key, 'support', 'expired_api_key', graceOver), await reached(b, key, 'support', 'expired_api_key', graceOver));
    expect(await chat(b, newKey, 'support')).toBe('ok');

    t = performance.now();
    await api(a, 'POST', `/admin/v1/keys/${rotated.key_id as string}/revoke`);
    timings.revoke = Math.max(await reached(b, newKey, 'support', 'revoked_api_key', t), await reached(a, newKey, 'support', 'revoked_api_key', t));

    process.stdout.write(`admin API changes reached the other ${store} gateway after (ms): ${JSON.stringify(Object.fromEntries(Object.entries(timings).map(([step, ms]) => [step, Math.round(ms)])))}\n`);
    for (const gateway of gateways) {
      expect(gateway.output()).not.toContain(key);
      expect(gateway.output()).not.toContain(ADMIN_TOKEN);
    }
  // Generous for a loaded machine: five changes, each waited for (REACH_BOUND_MS at most).
  }, 300_000);
});
