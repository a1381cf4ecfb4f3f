// Every event type end to end (docs/notifications-events.md): gateways on a real Redis with a
// webhook to a real HTTP receiver that verifies each signature. Key events from the admin API,
// key.expiring and key.expired from the sweeper, upstream.down and upstream.up from a runner
// that goes away and comes back, budget.threshold from requests, once per crossing across two
// gateways on one Redis. No delivered body carries a raw key or a key's hash.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCliInProcess } from '../helpers/cli.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = `whsec-${randomUUID()}`;
const ADMIN_TOKEN = `adm-${randomUUID()}`;
const PREFIX = `e2e${randomUUID().slice(0, 6)}:`;

let redis: TestRedis;
let receiver: WebhookReceiver;
let chatRunner: FakeUpstream;
let steady: FakeUpstream;
let flaky: FakeUpstream;
const gateways: TestGateway[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  [redis, receiver, chatRunner, steady, flaky] = await Promise.all([startRedis(), startWebhookReceiver([SECRET]), startFakeUpstream(), startFakeUpstream(), startFakeUpstream()]);
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.close()));
  await Promise.allSettled([receiver, chatRunner, steady, flaky].map((s) => s?.close()));
  await redis?.close();
});

async function gateway(): Promise<TestGateway> {
  const g = await startTestGateway({
    agents: {
      support: chatRunner.baseUrl,
      multi: { upstreams: [{ url: steady.baseUrl }, { url: flaky.baseUrl }], health_check: { path: '/healthz', interval: '50ms', timeout: '500ms', healthy: 2, unhealthy: 2 } },
    },
    redisUrl: redis.url,
    config: {
      admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      redis: { prefix: PREFIX },
      keys: { store: 'redis' },
      plans: { scale: { windows: [] }, tiny: { windows: [{ requests: 4, per: '1h' }] } },
      notifications: {
        webhooks: [{ url: receiver.url, secret: SECRET, events: ['*'] }],
        budget_thresholds: [0.5, 1.0],
        key_expiry_warning: '7d',
        key_expiry_sweep: '100ms',
        retry: { initial: '20ms', max: '100ms', give_up_after: '1h' },
      },
    },
  });
  gateways.push(g);
  return g;
}

async function admin(g: TestGateway, method: string, path: string, body?: unknown): Promise<any> {
  const answer = await fetch(`${g.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(answer.status, await answer.clone().text()).toBeLessThan(300);
  return answer.json();
}

const sha256 = (raw: string) => createHash('sha256').update(raw).digest('hex');

/** The verified deliveries of `type` (a retry of one event counts once). */
function delivered(type: string, where: (data: Record<string, unknown>) => boolean = () => true) {
  const byId = new Map<string, Record<string, unknown>>();
  for (const r of receiver.received) {
    if (r.verified && r.body?.type === type && where(r.body.data)) byId.set(r.body.id, r.body.data);
  }
  return [...byId.values()];
}

function waitForDelivered(type: string, count: number, where?: (data: Record<string, unknown>) => boolean): Promise<Record<string, unknown>[]> {
  return waitFor(`${count} × ${type}`, () => {
    const found = delivered(type, where);
    return found.length >= count ? found : false;
  }, 15_000);
}

describe('webhook event producers end to end', () => {
  let a: TestGateway;
  let b: TestGateway;

  beforeAll(async () => {
    a = await gateway();
    b = await gateway();
  }, 30_000);

  it('key.created, key.updated, key.rotated, key.revoked and key.expiring from the admin API', async () => {
    const created = await admin(a, 'POST', '/admin/v1/keys', { account: 'acme', plan: 'scale', agents: ['support'], name: 'e2e', expires_in: '3d' });
    secrets.push(created.key, sha256(created.key));
    const id = created.key_id as string;
    const mine = (data: Record<string, unknown>) => data.key_id === id;
    expect(await waitForDelivered('key.created', 1, mine)).toEqual([expect.objectContaining({ key_id: id, account: 'acme', plan: 'scale', name: 'e2e', agents: ['support'] })]);
    // Created inside the 7d warning: warned at once (and the sweepers do not warn again).
    await waitForDelivered('key.expiring', 1, mine);

    await admin(a, 'PATCH', `/admin/v1/keys/${id}`, { name: 'renamed' });
    expect(await waitForDelivered('key.updated', 1, mine)).toEqual([expect.objectContaining({ key_id: id, name: 'renamed', changed: ['name'] })]);

    const rotated = await admin(a, 'POST', `/admin/v1/keys/${id}/rotate`, { grace: '1h' });
    secrets.push(rotated.key, sha256(rotated.key));
    expect(await waitForDelivered('key.rotated', 1, mine)).toEqual([expect.objectContaining({ key_id: id, replaced_by: rotated.key_id })]);

    await admin(a, 'POST', `/admin/v1/keys/${rotated.key_id}/revoke`);
    expect(await waitForDelivered('key.revoked', 1, (data) => data.key_id === rotated.key_id)).toHaveLength(1);
    // The key's own expiry (3d) and the rotation's grace end (1h): warned about once each.
    await waitForDelivered('key.expiring', 2, mine);
  });

  it('key.created from the keys CLI (Redis mode): published into the outbox, delivered by the gateways', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agentgw-cli-events-'));
    try {
      const config = join(dir, 'gateway.yaml');
      await writeFile(
        config,
        [
          'agents:',
          `  support: { upstream: "${chatRunner.baseUrl}" }`,
          `redis: { url: "${redis.url}", prefix: "${PREFIX}" }`,
          'keys: { store: redis }',
          'plans: { scale: { windows: [] } }',
          'notifications:',
          `  webhooks: [{ url: "${receiver.url}", secret: "${SECRET}" }]`,
          '',
        ].join('\n'),
      );
      const run = await runCliInProcess(['keys', 'create', '--config', config, '--account', 'cli-acct', '--plan', 'scale', '--agent', 'support', '--json']);
      expect(run.code, run.stderr).toBe(0);
      const created = JSON.parse(run.stdout) as { key: string; key_id: string };
      secrets.push(created.key, sha256(created.key));
      expect(await waitForDelivered('key.created', 1, (data) => data.key_id === created.key_id)).toEqual([expect.objectContaining({ account: 'cli-acct', plan: 'scale' })]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('key.expiring and key.expired from the sweeper, once across two gateways', async () => {
    // Outside the 7d warning when created, inside it a second later: only a sweeper can warn.
    const soon = await admin(b, 'POST', '/admin/v1/keys', { account: 'acme', plan: 'scale', agents: ['support'], expires_at: new Date(Date.now() + 7 * 86_400_000 + 1_000).toISOString() });
    // Expires in 1.5 s: warned at creation, then announced expired by a sweeper.
    const brief = await admin(b, 'POST', '/admin/v1/keys', { account: 'acme', plan: 'scale', agents: ['support'], expires_at: new Date(Date.now() + 1_500).toISOString() });
    secrets.push(soon.key, brief.key, sha256(soon.key), sha256(brief.key));
    await waitForDelivered('key.expiring', 1, (data) => data.key_id === soon.key_id);
    await waitForDelivered('key.expired', 1, (data) => data.key_id === brief.key_id);
    // Both gateways swept many times since: still one of each.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(delivered('key.expiring', (data) => data.key_id === soon.key_id)).toHaveLength(1);
    expect(delivered('key.expiring', (data) => data.key_id === brief.key_id)).toHaveLength(1);
    expect(delivered('key.expired', (data) => data.key_id === brief.key_id)).toHaveLength(1);
    expect(delivered('key.expired', (data) => data.key_id === soon.key_id)).toHaveLength(0);
  });

  it('upstream.down and upstream.up when a runner goes away and comes back, once per transition', async () => {
    const port = flaky.port;
    await flaky.close();
    const down = await waitForDelivered('upstream.down', 1);
    expect(down[0]).toMatchObject({ agent: 'multi', target: `http://127.0.0.1:${port}`, reason: 'health_check' });
    flaky = await startFakeUpstream(undefined, { port });
    await waitForDelivered('upstream.up', 1);
    // Both gateways saw both transitions; the dedupe bucket made each one event (unless the
    // two saw it in different minutes, then two: at most one per gateway).
    expect(delivered('upstream.down').length).toBeLessThanOrEqual(2);
  });

  it('budget.threshold: each crossing once, across two gateways on one Redis', async () => {
    // Limits count per account (rate_limits.scope's default): the subject is the account.
    const account = `thr-${randomUUID().slice(0, 8)}`;
    const { rawKey } = await a.createKey({ account, plan: 'tiny', agents: ['support'] });
    secrets.push(rawKey, sha256(rawKey));
    const mine = (data: Record<string, unknown>) => data.subject === `account:${account}`;
    const statuses: number[] = [];
    for (const g of [a, a, b, b, b, a]) statuses.push((await postChat(g.url, '/agents/support/api/v1/chat', rawKey, { message: 'hi' })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    const crossings = await waitForDelivered('budget.threshold', 2, mine);
    expect(crossings.map((data) => [data.fraction, data.used])).toEqual([
      [0.5, 2],
      [1, 4],
    ]);
    expect(crossings[0]).toEqual({ subject: `account:${account}`, policy: 'hour', fraction: 0.5, window: 3_600_000, limit: 4, used: 2 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(delivered('budget.threshold', mine)).toHaveLength(2);
  });

  afterAll(() => {
    // Every delivery verified, and none carries a raw key or a key's hash.
    expect(receiver.received.length).toBeGreaterThan(0);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    const bodies = receiver.received.map((r) => r.raw).join('\n');
    for (const secret of secrets) expect(bodies).not.toContain(secret);
    expect(bodies).not.toMatch(/ha_[0-9A-Za-z]{38}/);
  });
});
