// H3-04 (docs/decisions/0085-a-position-per-webhook.md): each webhook has its own place in the
// outbox. With two webhooks, one receiver down (connection refused) or hanging (never answers)
// and the other healthy, the healthy one receives every event of one subject, in order, while
// the broken one has received none; once the broken receiver comes back it gets them all in
// order from its own position, and the healthy one is not sent them again, also across a
// gateway restart. In embedded mode (one shard) and on a real Redis (one subject: one shard).
// Before 0085 an event left the outbox only once every webhook had it, so the healthy
// receiver got the first event and then nothing until the broken one answered.
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { deliveredIds, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = `whsec_${Buffer.from(randomUUID()).toString('base64')}`;
const EVENTS = 6;
const ADMIN_TOKEN = `adm-${randomUUID()}`;

let redis: TestRedis;
let scratch: string;
const gateways: TestGateway[] = [];
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  redis = await startRedis();
  scratch = await mkdtemp(join(tmpdir(), 'agentgw-lanes-'));
});

afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.close()));
  await Promise.allSettled(receivers.map((r) => r.close()));
  await redis?.close();
  await rm(scratch, { recursive: true, force: true });
});

async function receiver(options: Parameters<typeof startWebhookReceiver>[1] = {}): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver([SECRET], options);
  receivers.push(r);
  return r;
}

async function gateway(urls: string[], redisPrefix: string | undefined, dir: string, giveUpAfter = '1h'): Promise<TestGateway> {
  const g = await startTestGateway({
    agents: { demo: 'http://127.0.0.1:9/api/v1' },
    redisUrl: redisPrefix ? redis.url : undefined,
    config: {
      admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      ...(redisPrefix ? { redis: { prefix: redisPrefix } } : {}),
      notifications: {
        // The broken receiver first: before 0085 each event went to the webhooks in this order.
        webhooks: urls.map((url) => ({ url, secret: SECRET })),
        retry: { initial: '20ms', max: '200ms', give_up_after: giveUpAfter },
        dir,
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

function publish(g: TestGateway, run: string): void {
  for (let seq = 0; seq < EVENTS; seq++) g.running.notifier.publish('key.updated', `key:key_${run}`, { key_id: `key_${run}`, seq });
}

/** The seqs a receiver acknowledged, in the order it acknowledged them. */
function seqs(r: WebhookReceiver): number[] {
  return r.received.filter((w) => w.status >= 200 && w.status < 300 && w.verified).map((w) => w.body!.data.seq as number);
}

interface ListedEvent {
  state: string;
  attempts: Array<{ webhook?: string; status?: number; error?: string }>;
}

async function events(g: TestGateway, subject: string): Promise<ListedEvent[]> {
  const answer = await fetch(`${g.adminUrl}/admin/v1/events?subject=${encodeURIComponent(subject)}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return ((await answer.json()) as { data: ListedEvent[] }).data;
}

const inOrder = Array.from({ length: EVENTS }, (_, i) => i);

describe.each([['embedded'], ['redis']] as const)('one webhook receiver broken, another healthy, %s mode', (mode) => {
  const prefix = () => (mode === 'redis' ? `lanes${randomUUID().slice(0, 8)}:` : undefined);

  it('a receiver that is down holds back only its own deliveries; back up, it gets every event in order, the healthy one nothing twice, across a restart', async () => {
    const placeholder = await receiver();
    const downPort = placeholder.port;
    const downUrl = placeholder.url;
    await placeholder.close();
    const healthy = await receiver();
    const dir = join(scratch, randomUUID());
    const redisPrefix = prefix();
    const first = await gateway([downUrl, healthy.url], redisPrefix, dir);
    publish(first, 'down');

    await waitFor(`all ${EVENTS} events at the healthy receiver`, () => seqs(healthy).length >= EVENTS, 30_000);
    expect(seqs(healthy)).toEqual(inOrder);
    // The down receiver has none of them: each is still pending, its failed attempts named.
    const downId = first.config.notifications.webhooks[0]!.id;
    const listed = await events(first, 'key:key_down');
    expect(listed.map((e) => e.state)).toEqual(Array(EVENTS).fill('pending'));
    await waitFor('a refused attempt recorded', async () => (await events(first, 'key:key_down')).some((e) => e.attempts.some((a) => a.webhook === downId && a.error !== undefined)), 15_000);
    await stop(first);

    const back = await receiver({ port: downPort });
    const second = await gateway([downUrl, healthy.url], redisPrefix, dir);
    await waitFor(`all ${EVENTS} events at the receiver back up`, () => seqs(back).length >= EVENTS, 30_000);
    expect(seqs(back)).toEqual(inOrder);
    // The healthy receiver's position survived the restart: nothing sent to it again.
    expect(seqs(healthy)).toEqual(inOrder);
    expect(new Set(deliveredIds(back))).toEqual(new Set(deliveredIds(healthy)));
    await stop(second);
  }, 120_000);

  it('a receiver that never answers holds back only its own deliveries', async () => {
    const hanging = await receiver({ mode: { kind: 'black-hole' } });
    const healthy = await receiver();
    const g = await gateway([hanging.url, healthy.url], prefix(), join(scratch, randomUUID()));
    publish(g, 'hang');
    await waitFor(`all ${EVENTS} events at the healthy receiver`, () => seqs(healthy).length >= EVENTS, 30_000);
    expect(seqs(healthy)).toEqual(inOrder);
    // The hanging one holds the first event's request open and has answered nothing.
    expect(hanging.openSockets()).toBeGreaterThan(0);
    expect(hanging.received).toEqual([]);
    // Every event is still pending (delivered to one webhook, not yet to the other), and its
    // attempts name the webhook they went to.
    const healthyId = g.config.notifications.webhooks[1]!.id;
    const listed = await waitFor('the healthy attempts recorded', async () => {
      const list = await events(g, 'key:key_hang');
      return list.every((e) => e.attempts.some((a) => a.webhook === healthyId && a.status === 200)) ? list : undefined;
    }, 15_000);
    expect(listed).toHaveLength(EVENTS);
    expect(listed.map((e) => e.state)).toEqual(Array(EVENTS).fill('pending'));
    await stop(g);
  }, 90_000);

  it('gives up on the down receiver per event after give_up_after (failed), its lane moving on, while the healthy one has every event', async () => {
    const placeholder = await receiver();
    const downUrl = placeholder.url;
    await placeholder.close();
    const healthy = await receiver();
    const g = await gateway([downUrl, healthy.url], prefix(), join(scratch, randomUUID()), '300ms');
    publish(g, 'giveup');
    await waitFor(`all ${EVENTS} events at the healthy receiver`, () => seqs(healthy).length >= EVENTS, 30_000);
    expect(seqs(healthy)).toEqual(inOrder);
    // Each event: delivered to one, given up for the other: failed once both are done.
    const listed = await waitFor('every event failed', async () => {
      const list = await events(g, 'key:key_giveup');
      return list.length === EVENTS && list.every((e) => e.state === 'failed') ? list : undefined;
    }, 30_000);
    const [downId, healthyId] = g.config.notifications.webhooks.map((w) => w.id);
    for (const e of listed) {
      expect(e.attempts).toContainEqual(expect.objectContaining({ webhook: healthyId, status: 200 }));
      expect(e.attempts).toContainEqual(expect.objectContaining({ webhook: downId, error: expect.any(String) }));
    }
    await stop(g);
  }, 90_000);
});

describe('two webhooks on one origin', () => {
  it('a path that never answers does not hold the connections of the other path (each webhook has its own pool)', async () => {
    const okIds: string[] = [];
    const held = new Set<ServerResponse>();
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/hang') return void held.add(res);
        okIds.push(String(req.headers['webhook-id']));
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const g = await startTestGateway({
        agents: { demo: 'http://127.0.0.1:9/api/v1' },
        // One connection per webhook: a pool shared by origin would be held by the hanging path.
        config: { notifications: { webhooks: [{ url: `${origin}/hang`, secret: SECRET }, { url: `${origin}/ok`, secret: SECRET }], concurrency: 1, retry: { initial: '20ms', max: '200ms' }, dir: join(scratch, randomUUID()) } },
      });
      gateways.push(g);
      publish(g, 'origin');
      await waitFor(`all ${EVENTS} events at /ok`, () => okIds.length >= EVENTS, 30_000);
      expect(new Set(okIds).size).toBe(EVENTS);
      expect(held.size).toBeGreaterThan(0);
      await stop(g);
    } finally {
      for (const res of held) res.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 90_000);
});
