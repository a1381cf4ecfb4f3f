// `agent-gateway events list` (docs/notifications.md "CLI") over what the gateway keeps: the
// events.jsonl file in embedded mode and the Redis hashes in Redis mode, both written here by
// the gateway's own outboxes. Filters, --json, the table, and refused options.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { newEventId } from '../../src/notifications/event-id.js';
import { FileWebhookOutbox } from '../../src/notifications/file-webhook-outbox.js';
import type { NotificationEvent } from '../../src/notifications/notifier.js';
import type { Outbox } from '../../src/notifications/outbox.js';
import { RedisWebhookOutbox } from '../../src/notifications/redis-webhook-outbox.js';
import type { RedisClient } from '../../src/redis/redis-client.js';
import { runCliInProcess } from '../helpers/cli.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

let redis: TestRedis;
let client: RedisClient;
let dir: string;

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedis(), mkdtemp(join(tmpdir(), 'agentgw-events-cli-'))]);
  client = new Redis(redis.url);
});

afterAll(async () => {
  client?.disconnect();
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

function events(): NotificationEvent[] {
  const now = Date.now();
  return [
    { id: newEventId(now), type: 'key.created', created_at: new Date(now).toISOString(), subject: 'key:key_a', data: { key_id: 'key_a' } },
    { id: newEventId(now + 1), type: 'upstream.down', created_at: new Date(now + 1).toISOString(), subject: 'agent:demo', data: { agent: 'demo' } },
    { id: newEventId(now + 2), type: 'key.revoked', created_at: new Date(now + 2).toISOString(), subject: 'key:key_a', data: { key_id: 'key_a' } },
  ];
}

async function seed(outbox: Outbox, list: NotificationEvent[]): Promise<void> {
  await outbox.append(list);
  await outbox.settle(list[0]!.id, 'hook', { at: new Date().toISOString(), status: 200, duration_ms: 5 }, 'delivered', ['hook']);
  await outbox.settle(list[1]!.id, 'hook', { at: new Date().toISOString(), error: 'ECONNREFUSED', duration_ms: 1 }, 'pending', ['hook']);
  await outbox.settle(list[1]!.id, 'hook', undefined, 'failed', ['hook']);
}

describe.each([['embedded'], ['redis']] as const)('events list, %s mode', (mode) => {
  let configPath: string;
  let list: NotificationEvent[];

  beforeAll(async () => {
    const prefix = `cli${randomUUID().slice(0, 8)}:`;
    const webhooks = join(dir, `webhooks-${mode}`);
    configPath = join(dir, `${mode}.yaml`);
    const redisBlock = mode === 'redis' ? `redis: { url: "${redis.url}", prefix: "${prefix}" }\n` : '';
    await writeFile(configPath, `agents: { demo: { upstream: "http://127.0.0.1:9/api/v1" } }\n${redisBlock}notifications:\n  webhooks: [ { url: "http://127.0.0.1:9/hook", secret: "cli-test-secret-0123456789" } ]\n  dir: "${webhooks}"\n`);
    list = events();
    if (mode === 'redis') await seed(new RedisWebhookOutbox({ client, prefix, leaseMs: 1000 }), list);
    else {
      const outbox = await FileWebhookOutbox.open(webhooks, Date.now());
      await seed(outbox, list);
      await outbox.close();
    }
  });

  it('prints the events newest first as a table, with state, attempts and the last attempt', async () => {
    const run = await runCliInProcess(['events', 'list', '--config', configPath]);
    expect(run.stderr).toBe('');
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID +TYPE +SUBJECT +STATE +ATTEMPTS +LAST +CREATED$/);
    expect(lines.slice(1).map((l) => l.split(/ +/)[0])).toEqual([list[2]!.id, list[1]!.id, list[0]!.id]);
    expect(lines[2]).toMatch(/upstream\.down +agent:demo +failed +1 +ECONNREFUSED/);
    expect(lines[3]).toMatch(/key\.created +key:key_a +delivered +1 +200/);
  });

  it('filters by type, subject and state, and prints --json as the API items', async () => {
    const bySubject = await runCliInProcess(['events', 'list', '--config', configPath, '--subject', 'key:key_a', '--json']);
    expect((JSON.parse(bySubject.stdout) as Array<{ id: string }>).map((e) => e.id)).toEqual([list[2]!.id, list[0]!.id]);
    const failed = JSON.parse((await runCliInProcess(['events', 'list', '--config', configPath, '--state', 'failed', '--json'])).stdout) as Array<Record<string, unknown>>;
    expect(failed).toEqual([expect.objectContaining({ id: list[1]!.id, type: 'upstream.down', state: 'failed', attempts: [expect.objectContaining({ error: 'ECONNREFUSED' })] })]);
    const none = await runCliInProcess(['events', 'list', '--config', configPath, '--type', 'key.expired']);
    expect(none.stdout).toBe('no events\n');
    const limited = JSON.parse((await runCliInProcess(['events', 'list', '--config', configPath, '--limit', '1', '--json'])).stdout) as unknown[];
    expect(limited).toHaveLength(1);
  });

  it('refuses an unknown type, state or limit with a usage error', async () => {
    for (const args of [['--type', 'key.deleted'], ['--state', 'lost'], ['--limit', '0']]) {
      const run = await runCliInProcess(['events', 'list', '--config', configPath, ...args]);
      expect(run.code, args.join(' ')).not.toBe(0);
      expect(run.stderr).toMatch(/expected/);
    }
  });
});
