// Signed webhooks on a Redis Cluster (docs/decisions/0067-webhook-outbox-and-delivery.md): the
// outbox's 16 shard streams and their leases are hash-tagged, so every script runs in one
// slot and the shards spread over the masters; a gateway delivers events of many subjects,
// each once and in order per subject, and lists them.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/wait.js';
import { deliveredIds, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = `whsec-${randomUUID()}`;
const ADMIN_TOKEN = `adm-${randomUUID()}`;
let cluster: TestRedisCluster;
let receiver: WebhookReceiver;
let gateway: TestGateway;
let dir: string;

beforeAll(async () => {
  [cluster, receiver, dir] = await Promise.all([startRedisCluster({ masters: 3 }), startWebhookReceiver([SECRET]), mkdtemp(join(tmpdir(), 'agentgw-wh-cluster-'))]);
  gateway = await startTestGateway({
    agents: { demo: 'http://127.0.0.1:9/api/v1' },
    config: {
      admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      redis: { mode: 'cluster', nodes: cluster.seeds, prefix: 'whc:' },
      notifications: { webhooks: [{ url: receiver.url, secret: SECRET }], retry: { initial: '20ms', max: '100ms' }, dir },
    },
  });
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await receiver?.close();
  await cluster?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('webhooks on a Redis Cluster', () => {
  it('delivers events of many subjects once each, in order per subject, over shards on every master', async () => {
    for (let i = 0; i < 60; i++) gateway.running.notifier.publish('key.updated', `key:key_${i % 12}`, { key_id: `key_${i % 12}`, seq: i });
    await waitFor('60 deliveries', () => deliveredIds(receiver).length === 60, 30_000);
    expect(new Set(deliveredIds(receiver)).size).toBe(60);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    for (let subject = 0; subject < 12; subject++) {
      const seqs = receiver.received.filter((r) => r.body!.data.key_id === `key_${subject}`).map((r) => r.body!.data.seq as number);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
    const masters = new Set(await Promise.all(Array.from({ length: 16 }, (_, shard) => cluster.masterFor(`{whc:webhooks:${shard}}:outbox`))));
    expect(masters.size).toBe(3);
    const page = await waitFor('all delivered', async () => {
      const answer = (await (await fetch(`${gateway.adminUrl}/admin/v1/events?state=delivered&limit=100`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { data: unknown[] };
      return answer.data.length === 60 ? answer : undefined;
    }, 10_000);
    expect(page.data).toHaveLength(60);
  });
});
