// A Redis master SIGKILLed while clients keep a gateway busy, for any topology that can
// promote a replica (Cluster, Sentinel). What must hold (docs/reliability.md):
// - every request gets an answer, never a 500, within command_timeout plus a margin;
// - the answers are what rate_limits.on_store_error says: all 200 with `allow` (the
//   per-instance fallback), 200 or 503 store_unavailable with `deny`;
// - every answered request's audit record reaches the stream (spooled while Redis is away,
//   replayed after), none lost;
// - once the replica is master, requests are counted in Redis again, exactly, by themselves.
import { expect } from 'vitest';
import type { RedisClient } from '../../src/redis/redis-client.js';
import { postChat, type TestGateway } from './gateway.js';
import { waitFor } from './redis-process.js';
import { CHAT, countedInRedis, spoolDrained, startLoad, streamRecords, type LoadResult } from './redis-topology-scenarios.js';

export interface MasterFailoverOptions {
  /** Started with rate_limits.lease off, so every admitted request is one count in Redis. */
  gateway: TestGateway;
  inspect: RedisClient;
  mode: 'allow' | 'deny';
  /** An account whose rate-limit counter (and the audit stream) live on the master that is killed. */
  account: string;
  commandTimeoutMs: number;
  kill(): Promise<void>;
  /** Resolves once a replica has taken over (the topology says so, not the gateway). */
  waitForNewMaster(): Promise<unknown>;
}

export interface FailoverFigures {
  answered: number;
  statuses: Record<string, number>;
  slowestMs: number;
  /** From the kill until the topology reported a new master. */
  promotedAfterMs: number;
  /** From the kill until a request was counted in Redis again. */
  countedAgainAfterMs: number;
  /** From the kill until every answered request's record was in the stream. */
  auditCompleteAfterMs: number;
}

/** Generous: a 2-core machine shared with other tests, and a topology changing under the client. */
const MARGIN_MS = 1_500;
const WORKERS = 4;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function runMasterFailover(options: MasterFailoverOptions): Promise<FailoverFigures> {
  const { gateway, inspect, mode } = options;
  const subject = `account:${options.account}`;
  const { rawKey } = await gateway.createKey({ account: options.account, plan: 'roomy' });
  const before = await countedInRedis(inspect, gateway.config, subject);
  for (let i = 0; i < 5; i += 1) expect((await send(gateway, rawKey)).status).toBe(200);
  expect(await countedInRedis(inspect, gateway.config, subject)).toBe(before + 5);

  const load = startLoad(gateway, rawKey, WORKERS, 10_000);
  let results: LoadResult[] = [];
  let killedAtMs = 0;
  let promotedAfterMs = 0;
  let countedAgainAfterMs = 0;
  try {
    await sleep(500);
    killedAtMs = performance.now();
    await options.kill();
    await options.waitForNewMaster();
    promotedAfterMs = performance.now() - killedAtMs;
    // The load goes on; the gateway finds the new master without being told.
    let promotedCount = -1;
    await waitFor('requests to be counted in Redis again', async () => {
      const counted = await countedInRedis(inspect, gateway.config, subject);
      if (promotedCount === -1) promotedCount = counted;
      return counted > promotedCount;
    }, 30_000, 50);
    countedAgainAfterMs = performance.now() - killedAtMs;
    await sleep(500);
  } finally {
    results = await load.stop();
  }

  // Counting is exact again: five more requests, five more counts.
  const settled = await countedInRedis(inspect, gateway.config, subject);
  for (let i = 0; i < 5; i += 1) expect((await send(gateway, rawKey)).status).toBe(200);
  expect(await countedInRedis(inspect, gateway.config, subject)).toBe(settled + 5);

  const statuses: Record<string, number> = {};
  for (const result of results) {
    const label = result.type === undefined ? String(result.status) : `${result.status} ${result.type}`;
    statuses[label] = (statuses[label] ?? 0) + 1;
  }
  const expected = mode === 'allow' ? ['200'] : ['200', '503 store_unavailable'];
  expect(Object.keys(statuses).filter((label) => !expected.includes(label)), JSON.stringify(statuses)).toEqual([]);
  // The load ran through the whole outage: with `deny` some of it was refused.
  if (mode === 'deny') expect(statuses['503 store_unavailable'] ?? 0).toBeGreaterThan(0);
  const slowestMs = Math.max(...results.map((r) => r.latencyMs));
  expect(slowestMs).toBeLessThan(options.commandTimeoutMs + MARGIN_MS);

  // Every answered request has its record in the stream once the spool has been replayed.
  const answeredIds = results.map((r) => r.requestId!);
  const stream = gateway.config.audit.redisStream!;
  let missing = answeredIds.length;
  let drained = false;
  await waitFor('every answered request to have its audit record in the stream', async () => {
    drained = await spoolDrained(gateway);
    const present = new Set((await streamRecords(inspect, stream)).map((record) => record.id));
    missing = answeredIds.filter((id) => !present.has(id)).length;
    return drained && missing === 0;
  }, 60_000, 250).catch((error: Error) => {
    const messages = new Map<string, number>();
    for (const line of gateway.logs) {
      const { level, msg, err } = JSON.parse(line) as { level: number; msg: string; err?: { message?: string } };
      if (level < 40) continue;
      const text = `${level} ${msg}${err?.message ? `: ${err.message}` : ''}`;
      messages.set(text, (messages.get(text) ?? 0) + 1);
    }
    throw new Error(`${error.message}: ${missing} of ${answeredIds.length} missing, spool drained: ${drained}; gateway warnings and errors:\n${[...messages].map(([text, n]) => `${n} × ${text}`).join('\n')}`);
  });
  const auditCompleteAfterMs = performance.now() - killedAtMs;

  const figures = { answered: results.length, statuses, slowestMs: Math.round(slowestMs), promotedAfterMs: Math.round(promotedAfterMs), countedAgainAfterMs: Math.round(countedAgainAfterMs), auditCompleteAfterMs: Math.round(auditCompleteAfterMs) };
  // The figures docs/reliability.md quotes; printed only when asked for.
  if (process.env.AGENTGW_FAILOVER_FIGURES) process.stdout.write(`failover figures (${mode}): ${JSON.stringify(figures)}\n`);
  return figures;
}

async function send(gateway: TestGateway, rawKey: string): Promise<Response> {
  const response = await postChat(gateway.url, CHAT, rawKey, { message: 'hi' });
  await response.text();
  return response;
}
