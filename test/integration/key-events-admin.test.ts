// Key lifecycle events from the admin API (docs/notifications-events.md, "Key events"), on
// the key file and on Redis: create, update, rotate and revoke each hand the notifier one
// event with the key's public fields, the update's changed fields and the rotation's
// replacement; a refused or no-op request hands it nothing; no body carries a raw key or a
// key's hash.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { RecordingNotifier } from '../helpers/recording-notifier.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const ADMIN_TOKEN = `adm-${randomUUID()}`;

let upstream: FakeUpstream;
let redis: TestRedis;

beforeAll(async () => {
  [upstream, redis] = await Promise.all([startFakeUpstream(), startRedis()]);
}, 60_000);

afterAll(async () => {
  await upstream?.close();
  await redis?.close();
});

async function startGateway(store: 'file' | 'redis', notifier: RecordingNotifier): Promise<TestGateway> {
  const prefix = `kev${randomUUID().slice(0, 8)}:`;
  return startTestGateway({
    agents: { support: upstream.baseUrl, sales: upstream.baseUrl },
    redisUrl: store === 'redis' ? redis.url : undefined,
    config: {
      admin: { host: '127.0.0.1', port: 0, tokens: [{ name: 'ops', token: ADMIN_TOKEN, role: 'admin' }] },
      plans: { starter: { windows: [{ requests: 1000, per: '1m' }] }, pro: { windows: [] } },
      keys: { store },
      notifications: { key_expiry_warning: '7d', key_expiry_sweep: '1m' },
      ...(store === 'redis' ? { redis: { prefix, command_timeout: '1s' } } : {}),
    },
    notifier,
  });
}

async function call(gw: TestGateway, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const answer = await fetch(`${gw.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: answer.status, json: await answer.json() };
}

const sha256 = (raw: string) => createHash('sha256').update(raw).digest('hex');

describe.each(['file', 'redis'] as const)('key events from the admin API (%s store)', (store) => {
  let gw: TestGateway;
  const notifier = new RecordingNotifier();

  beforeAll(async () => {
    gw = await startGateway(store, notifier);
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('create, update, rotate and revoke each publish one event without the raw key', async () => {
    const secrets: string[] = [];
    const created = await call(gw, 'POST', '/admin/v1/keys', { account: 'acme', plan: 'starter', agents: ['support'], name: 'ci bot', expires_in: '30d' });
    expect(created.status).toBe(201);
    const keyId = created.json.key_id as string;
    secrets.push(created.json.key, sha256(created.json.key));
    expect(notifier.events).toEqual([
      {
        type: 'key.created',
        subject: `key:${keyId}`,
        data: { key_id: keyId, account: 'acme', plan: 'starter', name: 'ci bot', agents: ['support'], expires_at: created.json.expires_at },
      },
    ]);

    expect((await call(gw, 'PATCH', `/admin/v1/keys/${keyId}`, { plan: 'pro', agents: ['support', 'sales'] })).status).toBe(200);
    // The same values again: nothing changed, nothing published.
    expect((await call(gw, 'PATCH', `/admin/v1/keys/${keyId}`, { plan: 'pro' })).status).toBe(200);
    // Refused (unknown plan): nothing written, nothing published.
    expect((await call(gw, 'PATCH', `/admin/v1/keys/${keyId}`, { plan: 'nope' })).status).toBe(400);
    expect(notifier.events.slice(1)).toEqual([
      { type: 'key.updated', subject: `key:${keyId}`, data: expect.objectContaining({ key_id: keyId, plan: 'pro', agents: ['support', 'sales'], changed: ['plan', 'agents'] }) },
    ]);

    const rotated = await call(gw, 'POST', `/admin/v1/keys/${keyId}/rotate`, { grace: '1h' });
    expect(rotated.status).toBe(201);
    const newId = rotated.json.key_id as string;
    secrets.push(rotated.json.key, sha256(rotated.json.key));
    const afterRotate = notifier.events.slice(2);
    expect(afterRotate[0]).toEqual({ type: 'key.rotated', subject: `key:${keyId}`, data: expect.objectContaining({ key_id: keyId, replaced_by: newId }) });
    // The old key now expires within the warning (the grace period): warned at once.
    expect(afterRotate.slice(1).map((event) => [event.type, event.data.key_id])).toEqual([['key.expiring', keyId]]);

    const revoked = await call(gw, 'POST', `/admin/v1/keys/${newId}/revoke`);
    expect(revoked.status).toBe(200);
    expect((await call(gw, 'POST', `/admin/v1/keys/${newId}/revoke`)).status).toBe(200);
    expect(notifier.ofType('key.revoked')).toEqual([{ type: 'key.revoked', subject: `key:${newId}`, data: expect.objectContaining({ key_id: newId, revoked_at: revoked.json.revoked_at }) }]);

    const bodies = JSON.stringify(notifier.events);
    for (const secret of secrets) expect(bodies).not.toContain(secret);
    expect(bodies).not.toMatch(/ha_[0-9A-Za-z]{38}/);
    expect(bodies).not.toMatch(/[0-9a-f]{64}/);
  });

  it('hostile requests (control characters, an unknown or malformed key id, a body too large) publish nothing', async () => {
    const before = notifier.events.length;
    expect((await call(gw, 'POST', '/admin/v1/keys', { account: 'acme', plan: 'starter', agents: ['support'], name: 'line\nforged: yes' })).status).toBe(400);
    expect((await call(gw, 'POST', '/admin/v1/keys', { account: 'acme\u0000', plan: 'starter', agents: ['support'] })).status).toBe(400);
    expect((await call(gw, 'POST', '/admin/v1/keys/key_AAAAAAAAAAAAAAAA/revoke')).status).toBe(404);
    expect((await call(gw, 'POST', '/admin/v1/keys/..%2F..%2Fetc/rotate', {})).status).toBeGreaterThanOrEqual(400);
    expect((await call(gw, 'PATCH', '/admin/v1/keys/key_AAAAAAAAAAAAAAAA', { name: 'x'.repeat(2_000_000) })).status).toBeGreaterThanOrEqual(400);
    expect(notifier.events.length).toBe(before);
  });

  it('a key created to expire inside the warning is warned about at once', async () => {
    const before = notifier.events.length;
    const created = await call(gw, 'POST', '/admin/v1/keys', { account: 'acme', plan: 'starter', agents: ['support'], expires_in: '2d' });
    expect(notifier.events.slice(before).map((event) => [event.type, event.data.key_id])).toEqual([
      ['key.created', created.json.key_id],
      ['key.expiring', created.json.key_id],
    ]);
  });
});
