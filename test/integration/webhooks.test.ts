// Signed webhooks end to end (docs/notifications.md): the gateway in process with a real HTTP
// receiver, in embedded mode (outbox files) and on a real Redis (outbox streams). Events are
// published through the gateway's own notifier (RunningGateway.notifier), as its producers do.
// Covered: delivered and verified, retries keep Webhook-Id, order per subject, a receiver down
// across a gateway restart, two gateways on one Redis sending each event once, the events
// API (list, filters, redeliver, unknown id 404, viewer cannot redeliver), no secret in any
// body, log line or admin answer.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { deliveredIds, startWebhookReceiver, type ReceiverMode, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = `whsec-${randomUUID()}`;
const ADMIN_TOKEN = `adm-${randomUUID()}`;
const VIEWER_TOKEN = `view-${randomUUID()}`;
const UPSTREAM = 'http://127.0.0.1:9/api/v1';

let redis: TestRedis;
let scratch: string;
const gateways: TestGateway[] = [];
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  redis = await startRedis();
  scratch = await mkdtemp(join(tmpdir(), 'agentgw-webhooks-'));
});

afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.close()));
  await Promise.allSettled(receivers.map((r) => r.close()));
  await redis?.close();
  await rm(scratch, { recursive: true, force: true });
});

async function receiver(mode?: ReceiverMode, port?: number): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver([SECRET], { mode, port });
  receivers.push(r);
  return r;
}

async function gateway(options: { url: string; redisPrefix?: string; dir?: string; concurrency?: number }): Promise<TestGateway> {
  const g = await startTestGateway({
    agents: { demo: UPSTREAM },
    redisUrl: options.redisPrefix ? redis.url : undefined,
    config: {
      admin: {
        host: '127.0.0.1',
        port: 0,
        tokens: [
          { name: 'ops', token: ADMIN_TOKEN, role: 'admin' },
          { name: 'dash', token: VIEWER_TOKEN, role: 'viewer' },
        ],
      },
      ...(options.redisPrefix ? { redis: { prefix: options.redisPrefix } } : {}),
      notifications: {
        webhooks: [{ url: options.url, secret: SECRET, events: ['*'] }],
        retry: { initial: '20ms', max: '100ms', give_up_after: '1h' },
        dir: options.dir ?? join(scratch, randomUUID()),
        ...(options.concurrency ? { concurrency: options.concurrency } : {}),
      },
    },
  });
  gateways.push(g);
  return g;
}

async function stop(g: TestGateway): Promise<void> {
  gateways.splice(gateways.indexOf(g), 1);
  await g.close();
}

function adminGet(g: TestGateway, path: string, token = ADMIN_TOKEN): Promise<Response> {
  return fetch(`${g.adminUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
}

function adminPost(g: TestGateway, path: string, token = ADMIN_TOKEN): Promise<Response> {
  return fetch(`${g.adminUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
}

describe.each([['embedded'], ['redis']] as const)('webhooks, %s mode', (mode) => {
  const prefix = () => (mode === 'redis' ? `wh${randomUUID().slice(0, 8)}:` : undefined);

  it('delivers a signed body {id, type, created_at, data} with Webhook-Id, and the events API shows it delivered', async () => {
    const r = await receiver();
    const g = await gateway({ url: r.url, redisPrefix: prefix() });
    g.running.notifier.publish('key.created', 'key:key_abc', { key_id: 'key_abc', account: 'acme', plan: 'scale' });
    const [got] = await waitFor('a delivery', () => (r.received.length > 0 ? r.received : undefined), 15_000);
    expect(got!.verified).toBe(true);
    expect(got!.contentType).toBe('application/json');
    // Standard Webhooks by default, verified by the standardwebhooks library (the receiver's check).
    expect(got!.signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(got!.timestamp).toMatch(/^\d{10}$/);
    expect(Object.keys(JSON.parse(got!.raw) as object)).toEqual(['id', 'type', 'created_at', 'data']);
    expect(got!.body).toMatchObject({ type: 'key.created', data: { key_id: 'key_abc', account: 'acme', plan: 'scale' } });
    expect(got!.id).toBe(got!.body!.id);
    expect(got!.id).toMatch(/^evt_[0-9A-Z]{26}$/);

    const listed = await waitFor('state delivered', async () => {
      const page = (await (await adminGet(g, '/admin/v1/events?type=key.created')).json()) as { data: Array<Record<string, unknown>>; next_cursor: string | null };
      return page.data[0]?.state === 'delivered' ? page : undefined;
    }, 10_000);
    expect(listed.data).toHaveLength(1);
    expect(listed.data[0]).toMatchObject({ id: got!.id, type: 'key.created', subject: 'key:key_abc', state: 'delivered', attempts: [{ status: 200 }] });
    // Filters that match nothing, and a viewer may read.
    const none = (await (await adminGet(g, '/admin/v1/events?state=failed', VIEWER_TOKEN)).json()) as { data: unknown[] };
    expect(none.data).toEqual([]);
    // No secret anywhere: body, logs, admin answers.
    expect(r.received.every((w) => !w.raw.includes(SECRET))).toBe(true);
    expect(g.logs.join('')).not.toContain(SECRET);
    expect(JSON.stringify(listed)).not.toContain(SECRET);
    expect(JSON.stringify(g.config)).not.toContain(SECRET);
    await stop(g);
  });

  it('retries a failing receiver with the same Webhook-Id until it answers 2xx; the attempts are listed', async () => {
    const r = await receiver({ kind: 'fail-first', failures: 2 });
    const g = await gateway({ url: r.url, redisPrefix: prefix() });
    g.running.notifier.publish('upstream.down', 'agent:demo', { agent: 'demo', target: 'http://127.0.0.1:9' });
    await waitFor('three attempts', () => r.received.length >= 3, 15_000);
    expect(r.received.map((w) => w.status)).toEqual([503, 503, 200]);
    expect(new Set(r.received.map((w) => w.id)).size).toBe(1);
    expect(r.received.every((w) => w.verified)).toBe(true);
    const page = await waitFor('state delivered', async () => {
      const p = (await (await adminGet(g, `/admin/v1/events?subject=${encodeURIComponent('agent:demo')}`)).json()) as { data: Array<{ state: string; attempts: Array<{ status?: number }> }> };
      return p.data[0]?.state === 'delivered' ? p : undefined;
    }, 10_000);
    expect(page.data[0]!.attempts.map((a) => a.status)).toEqual([503, 503, 200]);
    await stop(g);
  });

  it('delivers in order per subject', async () => {
    const r = await receiver();
    const g = await gateway({ url: r.url, redisPrefix: prefix() });
    for (let seq = 0; seq < 30; seq++) g.running.notifier.publish('key.updated', `key:key_${seq % 3}`, { key_id: `key_${seq % 3}`, seq });
    await waitFor('30 deliveries', () => r.received.length >= 30, 20_000);
    for (let subject = 0; subject < 3; subject++) {
      const seqs = r.received.filter((w) => w.body!.data.key_id === `key_${subject}`).map((w) => w.body!.data.seq as number);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(seqs).toHaveLength(10);
    }
    await stop(g);
  });

  it('keeps every event for a receiver that is down across a gateway restart', async () => {
    const placeholder = await receiver();
    const port = placeholder.port;
    const url = placeholder.url;
    await placeholder.close();
    const dir = join(scratch, randomUUID());
    const redisPrefix = prefix();
    const first = await gateway({ url, redisPrefix, dir });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) first.running.notifier.publish('key.revoked', `key:key_r${i}`, { key_id: `key_r${i}`, i });
    const page = await waitFor('5 pending events', async () => {
      const p = (await (await adminGet(first, '/admin/v1/events')).json()) as { data: Array<{ id: string; state: string; attempts: unknown[] }> };
      return p.data.length === 5 && p.data.some((e) => e.attempts.length > 0) ? p : undefined;
    }, 15_000);
    ids.push(...page.data.map((e) => e.id));
    await stop(first);

    const back = await receiver(undefined, port);
    const second = await gateway({ url, redisPrefix, dir });
    await waitFor('all 5 after the restart', () => ids.every((id) => deliveredIds(back).includes(id)), 20_000);
    expect(back.received.every((w) => w.verified)).toBe(true);
    await stop(second);
  });

  it('redelivers a known event with its id (202) and answers 404 for an unknown one; a viewer may not redeliver', async () => {
    const r = await receiver();
    const g = await gateway({ url: r.url, redisPrefix: prefix() });
    g.running.notifier.publish('key.rotated', 'key:key_x', { key_id: 'key_x', new_key_id: 'key_y' });
    await waitFor('a delivery', () => deliveredIds(r).length === 1, 15_000);
    const id = deliveredIds(r)[0]!;
    await waitFor('delivered state', async () => ((await (await adminGet(g, '/admin/v1/events?state=delivered')).json()) as { data: unknown[] }).data.length === 1, 10_000);

    const viewer = await adminPost(g, `/admin/v1/events/${id}/redeliver`, VIEWER_TOKEN);
    expect(viewer.status).toBe(403);
    const unknown = await adminPost(g, '/admin/v1/events/evt_01ZZZZZZZZZZZZZZZZZZZZZZZZ/redeliver');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { type: string } }).error.type).toBe('not_found');
    const junk = await adminPost(g, '/admin/v1/events/..%2F..%2Fetc/redeliver');
    expect(junk.status).toBe(404);
    expect(deliveredIds(r)).toEqual([id]);

    const again = await adminPost(g, `/admin/v1/events/${id}/redeliver`);
    expect(again.status).toBe(202);
    expect(((await again.json()) as { id: string; state: string })).toMatchObject({ id, state: 'pending' });
    await waitFor('the redelivery', () => deliveredIds(r).length === 2, 15_000);
    expect(deliveredIds(r)).toEqual([id, id]);
    await stop(g);
  });

  it('refuses bad list queries with 400 and changes nothing', async () => {
    const r = await receiver();
    const g = await gateway({ url: r.url, redisPrefix: prefix() });
    for (const query of ['type=key.nope', 'state=lost', 'limit=0', 'cursor=abc', 'bogus=1']) {
      const answer = await adminGet(g, `/admin/v1/events?${query}`);
      expect(answer.status, query).toBe(400);
    }
    await stop(g);
  });
});

describe('webhooks, each signature format end to end with the real verifiers', () => {
  const WHSEC_NEW = `whsec_${Buffer.from(randomUUID()).toString('base64')}`;
  const WHSEC_OLD = `whsec_${Buffer.from(randomUUID()).toString('base64')}`;

  it.each([
    ['standard', 'the standardwebhooks library'],
    ['t-v1', "Stripe's library"],
  ] as const)('format %s during a secret rotation: %s verifies with either secret', async (format, _verifier) => {
    const withNew = await startWebhookReceiver([WHSEC_NEW], { format });
    const withOld = await startWebhookReceiver([WHSEC_OLD], { format });
    receivers.push(withNew, withOld);
    const g = await startTestGateway({
      agents: { demo: UPSTREAM },
      config: { notifications: { webhooks: [withNew, withOld].map((r) => ({ url: r.url, secret: [WHSEC_NEW, WHSEC_OLD], format })), retry: { initial: '20ms', max: '100ms' }, dir: join(scratch, randomUUID()) } },
    });
    gateways.push(g);
    g.running.notifier.publish('key.revoked', 'key:key_rot', { key_id: 'key_rot' });
    for (const r of [withNew, withOld]) {
      const [got] = await waitFor('a delivery', () => (r.received.length > 0 ? r.received : undefined), 15_000);
      expect(got!.verified).toBe(true);
      expect(got!.status).toBe(200);
      expect(format === 'standard' ? got!.signature!.split(' ') : got!.signature!.split(',v1=').slice(1)).toHaveLength(2);
    }
    await stop(g);
  });
});

describe('webhooks, a receiver that never answers', () => {
  it('holds at most `concurrency` connections to it and keeps the waiting events in the outbox, not in memory', async () => {
    const r = await receiver({ kind: 'black-hole' });
    const g = await gateway({ url: r.url, redisPrefix: `whbh${randomUUID().slice(0, 8)}:`, concurrency: 4 });
    for (let i = 0; i < 500; i++) g.running.notifier.publish('key.updated', `key:key_${i}`, { key_id: `key_${i}`, i });
    const gauge = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await (await fetch(`${g.adminUrl}/metrics`)).text())?.[1]);
    await waitFor('all 500 events in the outbox', async () => (await gauge('agentgw_webhook_outbox_depth')) === 500, 15_000);
    await waitFor('4 deliveries held open', () => r.openSockets() === 4, 15_000);
    expect(await gauge('agentgw_webhook_oldest_undelivered_seconds')).toBeGreaterThanOrEqual(0);
    // Still 4 a poll interval later: a held delivery is not joined by more.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(r.openSockets()).toBe(4);
    expect(r.received).toEqual([]);
    await stop(g);
  });
});

describe('webhooks, two gateways on one Redis', () => {
  it('sends each event once', async () => {
    const r = await receiver();
    const redisPrefix = `wh2${randomUUID().slice(0, 8)}:`;
    const [a, b] = [await gateway({ url: r.url, redisPrefix }), await gateway({ url: r.url, redisPrefix })];
    for (let i = 0; i < 40; i++) (i % 2 === 0 ? a : b).running.notifier.publish('key.created', `key:key_${i}`, { key_id: `key_${i}` });
    await waitFor('40 deliveries', () => new Set(deliveredIds(r)).size === 40, 20_000);
    // Some time for a double send to show: both gateways' loops poll at least twice more.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(r.received).toHaveLength(40);
    expect(new Set(r.received.map((w) => w.id)).size).toBe(40);
    await stop(a);
    await stop(b);
  });
});
