// In embedded mode the `keys` CLI's writes reach the webhooks, through the same outbox
// (docs/notifications-events.md "Key events"; decision 0085): the built CLI as a child process
// writes keys beside a running gateway process (also a child), and a real HTTP receiver gets
// key.created, key.updated and key.revoked, verified by the standardwebhooks library, in
// order, never with the raw key. A write made while no gateway runs is delivered by the next
// one to start. A hostile file in the inbox is passed over without stopping delivery.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBuiltCli } from '../helpers/cli.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = `whsec_${Buffer.from(randomUUID()).toString('base64')}`;

let dir: string;
let receiver: WebhookReceiver;
const gateways: GatewayProcess[] = [];

beforeAll(async () => {
  [dir, receiver] = await Promise.all([mkdtemp(join(tmpdir(), 'agentgw-cli-embedded-')), startWebhookReceiver([SECRET])]);
});

afterAll(async () => {
  await Promise.allSettled(gateways.map((g) => g.stop()));
  await receiver?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function config(): Record<string, unknown> {
  return {
    agents: { demo: { upstream: 'http://127.0.0.1:9/api/v1' } },
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl') },
    plans: { scale: { windows: [] } },
    notifications: { webhooks: [{ url: receiver.url, secret: SECRET }], retry: { initial: '20ms', max: '200ms' }, dir: join(dir, 'webhooks') },
  };
}

async function cli(args: string[]): Promise<string> {
  const run = await runBuiltCli([...args, '--config', join(dir, 'gateway.yaml')], { timeoutMs: 60_000 });
  expect(run.code, run.stderr).toBe(0);
  return run.stdout;
}

function delivered(keyId: string): Array<{ type: string; data: Record<string, unknown> }> {
  return receiver.received.filter((r) => r.verified && r.status === 200 && r.body?.data.key_id === keyId).map((r) => ({ type: r.body!.type, data: r.body!.data }));
}

describe('keys CLI writes in embedded mode', () => {
  it('reach the webhook through the outbox the running gateway delivers, in order, without the raw key', async () => {
    await writeFile(join(dir, 'gateway.yaml'), stringify(config()));
    const gateway = await startGatewayProcess(dir, 'gateway', config());
    gateways.push(gateway);
    // A file in the inbox that is not events: passed over, delivery goes on.
    await mkdir(join(dir, 'webhooks', 'incoming'), { recursive: true });
    await writeFile(join(dir, 'webhooks', 'incoming', 'evt_0-hostile.jsonl'), 'not json\n{"id":1}\n[]\n');

    const created = JSON.parse(await cli(['keys', 'create', '--account', 'acme', '--plan', 'scale', '--agent', 'demo', '--json'])) as { key: string; key_id: string };
    await cli(['keys', 'update', created.key_id, '--name', 'renamed']);
    await cli(['keys', 'revoke', created.key_id]);

    const events = await waitFor('three key events at the receiver', () => (delivered(created.key_id).length >= 3 ? delivered(created.key_id) : undefined), 30_000);
    expect(events.map((e) => e.type)).toEqual(['key.created', 'key.updated', 'key.revoked']);
    expect(events[0]!.data).toMatchObject({ key_id: created.key_id, account: 'acme', plan: 'scale' });
    expect(receiver.received.every((r) => !r.raw.includes(created.key))).toBe(true);
    await gateway.stop();
    gateways.splice(gateways.indexOf(gateway), 1);
  }, 120_000);

  it('a write made while no gateway runs is delivered by the next gateway to start', async () => {
    const created = JSON.parse(await cli(['keys', 'create', '--account', 'later', '--plan', 'scale', '--agent', 'demo', '--json'])) as { key_id: string };
    expect(delivered(created.key_id)).toEqual([]);
    const gateway = await startGatewayProcess(dir, 'gateway', config());
    gateways.push(gateway);
    const events = await waitFor('key.created at the receiver', () => (delivered(created.key_id).length >= 1 ? delivered(created.key_id) : undefined), 30_000);
    expect(events.map((e) => e.type)).toEqual(['key.created']);
    await gateway.stop();
    gateways.splice(gateways.indexOf(gateway), 1);
  }, 120_000);
});
