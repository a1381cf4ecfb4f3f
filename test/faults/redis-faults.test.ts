// Redis faults under concurrent traffic, against two gateway processes sharing one real Redis
// (keys, limits and the audit stream all in it): one with `on_store_error: allow`, one with
// `deny`. Redis is stopped and restarted, paused with SIGSTOP (hung, not refused), and slowed
// by busy scripts past and below `redis.command_timeout`. Allow keeps answering 200, deny
// answers 503 store_unavailable only while Redis is unusable, no request hangs on a hung
// Redis, and once it is back every answered request is in both audit sinks.
// (Redis SIGKILLed mid-load for the limiter alone: test/integration/gateway-rate-limits-cluster.test.ts;
// stopped for the audit sink alone: test/integration/gateway-audit-outage.test.ts.)
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, type RedisClient } from '../../src/redis/redis-client.js';
import { silentLogger } from '../../src/logger.js';
import type { TestRedis } from '../helpers/redis.js';
import { answered, checkAudit } from '../helpers/faults/audit-check.js';
import { startFaultBed, type FaultBed } from '../helpers/faults/fault-bed.js';
import { describeSample, MB, type FaultGateway, type ProcessSample } from '../helpers/faults/fault-gateway.js';
import type { RetainedMemory } from '../../scripts/inspector-gc.mjs';
import type { FaultRunner } from '../helpers/faults/fault-runner.js';
import { createKeys } from '../helpers/faults/create-keys.js';
import { findSecrets, revealingErrorBodies } from '../helpers/faults/leaks.js';
import { reportRow } from '../helpers/faults/report.js';
import { answerSummary, startTraffic, type Outcome, type Traffic } from '../helpers/faults/traffic.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { readAuditFile, readAuditStream } from '../helpers/audit-records.js';
import { dumpRedis } from '../helpers/redis-dump.js';

const PREFIX = 'faults-rd:';
const MODES = ['allow', 'deny'] as const;
type Mode = (typeof MODES)[number];
/**
 * "Nothing hung" is proved by a condition, not a wall-clock bound: a request that waits on a
 * hung Redis can only finish once Redis answers again, so every request that started in the
 * first half of a hang must have finished before the hang was released. The hang lasts at
 * least 2 s and at least 4 × the slowest request of the warm-up measured in this run, so a
 * request that does not wait has twice the slowest fault-free latency of this very machine
 * to finish, however loaded it is.
 */
let hangMs = 2_000;
/** When each hang (SIGSTOP, the 2 s script) began and was released: performance.now(), the traffic's clock. */
const hangs = new Map<string, { startedMs: number; releasedMs: number }>();

/** Blocks Redis for ARGV[1] ms: a slow command (a big KEYS, a heavy script) holding the single thread. */
const BUSY_SCRIPT = `local t = redis.call('TIME') local start = t[1] * 1000000 + t[2]
while true do local n = redis.call('TIME') if (n[1] * 1000000 + n[2]) - start >= ARGV[1] * 1000 then return 1 end end`;

let bed: FaultBed;
let dir: string;
let redis: TestRedis;
let inspect: RedisClient;
let runner: FaultRunner;
const gateways = new Map<Mode, FaultGateway>();
let key: string;
let phase = 'warm-up';
const traffic = new Map<Mode, Traffic>();
const baselines = new Map<Mode, ProcessSample>();
const retainedBaselines = new Map<Mode, RetainedMemory>();
/**
 * Growth allowed in what survives a full collection over all the faults. Six local runs on
 * Node 22, 24 and 26, 15,000–33,000 requests a gateway: −0.2 to +1.5 MB (code that first
 * runs during the faults keeps its bytecode). A leak of 1 KB a request passes the bound
 * within 4,000 requests, fewer than any run answers.
 */
const RETAINED_GROWTH_BOUND = 4 * MB;

beforeAll(async () => {
  // AOF: keys and audit entries written before a stop survive the restart, as in production.
  bed = await startFaultBed({ name: 'redis', prefix: PREFIX, persistentRedis: true });
  ({ dir, redis, runner, inspect } = bed);
  const documentFor = (mode: Mode): Record<string, unknown> => ({
    redis: { url: redis.url, prefix: PREFIX, command_timeout: '100ms' },
    rate_limits: { on_store_error: mode },
    keys: { store: 'redis', cache_ttl: '10m' },
    plans: { bulk: { windows: [{ requests: 1_000_000, per: '1m' }, { requests: 10_000_000, per: '1d' }] } },
    agents: { ok: { upstream: runner.baseUrl('ok') } },
    audit: { file: join(dir, `${mode}-audit.jsonl`), redis_stream: `${PREFIX}audit:${mode}`, spool: join(dir, `${mode}-spool.jsonl`) },
    shutdown_grace: '2s',
  });
  key = (await createKeys(documentFor('allow'), [{ account: 'redis-faults', plan: 'bulk', agents: ['ok'] }]))[0]!;
  const started = await Promise.all(MODES.map((mode) => bed.startGateway({ name: mode, config: documentFor(mode), inspect: true })));
  for (const [i, mode] of MODES.entries()) gateways.set(mode, started[i]!);
  for (const mode of MODES) {
    traffic.set(
      mode,
      startTraffic({ baseUrl: gateways.get(mode)!.url, key, concurrency: 8, idPrefix: `rd-${mode}`, label: () => phase, plan: (i) => ({ agent: 'ok', route: i % 4 === 0 ? 'chat/stream' : 'chat' }) }),
    );
  }
  // Past the limiter's failover breaker from any cold-start stall, then the baseline.
  await sleep(1_500);
  const warmUp = MODES.flatMap((mode) => traffic.get(mode)!.outcomes.filter((o) => o.label === 'warm-up'));
  hangMs = Math.max(2_000, 4 * Math.max(0, ...warmUp.map((o) => o.latencyMs)));
  for (const mode of MODES) {
    baselines.set(mode, await gateways.get(mode)!.sample());
    retainedBaselines.set(mode, await gateways.get(mode)!.retained());
  }
});

afterAll(async () => {
  for (const t of traffic.values()) await t.stop();
  redis?.resume();
  await bed?.close();
});

/** Runs busy scripts of `busyMs` with `gapMs` between them for `forMs`, on its own connection. */
async function slowRedis(busyMs: number, gapMs: number, forMs: number, onFirstReleased?: () => void): Promise<void> {
  const client = createRedisClient({ url: redis.url, prefix: PREFIX, commandTimeoutMs: busyMs + 5_000 }, silentLogger, 'test-slow');
  try {
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
    const until = performance.now() + forMs;
    while (performance.now() < until) {
      await client.eval(BUSY_SCRIPT, 0, busyMs);
      onFirstReleased?.();
      onFirstReleased = undefined;
      await sleep(gapMs);
    }
  } finally {
    client.disconnect();
  }
}

/** Outcomes of a phase (`label`), or of a phase and its recovery (`label*`). */
function outcomesOf(mode: Mode, label?: string): Outcome[] {
  const withRecovery = label?.endsWith('*');
  const name = withRecovery ? label!.slice(0, -1) : label;
  return traffic.get(mode)!.outcomes.filter((o) => name === undefined || o.label === name || (withRecovery && o.label === `${name}: recovery`));
}

function recordPhase(fault: string, label: string): void {
  for (const mode of MODES) {
    // The fault and the recovery time after it: how long deny keeps failing shows here.
    const outcomes = outcomesOf(mode, `${label}*`);
    const affected = outcomes.filter((o) => o.status !== 200).length;
    const slowest = Math.max(0, ...outcomes.map((o) => o.latencyMs));
    reportRow({
      fault: `Redis ${fault} (${mode})`,
      answered: `${answerSummary(outcomes)}; slowest ${Math.round(slowest)} ms`,
      affected: `${affected}/${outcomes.length}`,
      auditLost: 'see final check',
      memory: '-',
    });
  }
}

async function runPhase(label: string, fault: () => Promise<void>, recoverMs: number): Promise<void> {
  phase = label;
  await fault();
  phase = `${label}: recovery`;
  await sleep(recoverMs);
}

describe('Redis faults under concurrent traffic (two gateway processes, allow and deny)', () => {
  it('stopped and restarted: allow answers 200 from memory, deny 503 store_unavailable, both recover', async () => {
    await runPhase(
      'stopped',
      async () => {
        await redis.stop();
        await sleep(2_000);
        await redis.start();
      },
      1_500,
    );
    recordPhase('stopped 2 s, restarted', 'stopped');
    expect(outcomesOf('deny', 'stopped').some((o) => o.errorType === 'store_unavailable')).toBe(true);
  });

  it('paused with SIGSTOP (hung, not refused): no request waits on it', async () => {
    await runPhase(
      'paused',
      async () => {
        const startedMs = performance.now();
        redis.pause();
        await sleep(hangMs);
        hangs.set('paused', { startedMs, releasedMs: performance.now() });
        redis.resume();
      },
      1_500,
    );
    recordPhase('paused (SIGSTOP) 2 s', 'paused');
    expect(outcomesOf('deny', 'paused').some((o) => o.errorType === 'store_unavailable')).toBe(true);
  });

  it('busy past command_timeout (one 2 s script, then 150 ms ones), then below it (30 ms): deny fails only while it is past', async () => {
    // One script longer than a lease lives (≤ 1.25 s, renewed ahead; decision 0029) plus
    // the timeout: every lease runs out while Redis is held, its renewal and the next
    // request's call both miss command_timeout, so deny must answer 503. With 150 ms
    // scripts 20 ms apart, a call that lands in a script's last 100 ms or between two gets
    // its answer in time (7 in 10): a renewal that does keeps deny admitting from its
    // lease, so whether deny fails there is chance, and only what it may answer is checked.
    // (The first script lasts hangMs: 2 s, or longer on a machine whose warm-up was slow.)
    await runPhase(
      'busy 2 s',
      () => {
        const startedMs = performance.now();
        return slowRedis(hangMs, 20, hangMs, () => hangs.set('busy 2 s', { startedMs, releasedMs: performance.now() }));
      },
      1_200,
    );
    recordPhase('busy: one 2 s script', 'busy 2 s');
    await runPhase('slow 150 ms', () => slowRedis(150, 20, 2_000), 1_200);
    recordPhase('slowed: 150 ms busy scripts for 2 s', 'slow 150 ms');
    await runPhase('slow 30 ms', () => slowRedis(30, 30, 2_000), 1_000);
    recordPhase('slowed: 30 ms busy scripts for 2 s', 'slow 30 ms');
    expect(outcomesOf('deny', 'busy 2 s').some((o) => o.errorType === 'store_unavailable')).toBe(true);
    // Below the timeout Redis is slow, not failing: deny still admits from it. (Not all: on a
    // busy box one reply can still miss 100 ms, and the breaker then skips Redis for a second.)
    expect(outcomesOf('deny', 'slow 30 ms').filter((o) => o.status === 200).length).toBeGreaterThan(0);
  });

  it('through all of it: allow only ever answered 200, deny only 200 or 503 store_unavailable, nothing hung', async () => {
    // Deny is back on Redis: a run of 200s after the last fault.
    await waitFor('the deny gateway to answer 200 again', () => outcomesOf('deny').slice(-20).every((o) => o.status === 200), 8_000);
    phase = 'done';
    for (const t of traffic.values()) await t.stop();
    let checkedInHangs = 0;
    for (const mode of MODES) {
      const outcomes = outcomesOf(mode);
      expect(outcomes.length).toBeGreaterThan(200);
      for (const o of outcomes) {
        expect(o.transportError, `${mode} ${o.id} (${o.label})`).toBeUndefined();
        const hang = hangs.get(o.label);
        if (hang !== undefined && o.startedMs <= hang.startedMs + (hang.releasedMs - hang.startedMs) / 2) {
          expect(o.startedMs + o.latencyMs, `${mode} ${o.id} (${o.label}) started ${Math.round(o.startedMs - hang.startedMs)} ms into a ${Math.round(hang.releasedMs - hang.startedMs)} ms hang, took ${Math.round(o.latencyMs)} ms: waited for Redis`).toBeLessThan(hang.releasedMs);
          checkedInHangs += 1;
        }
        if (mode === 'allow' || o.status === 200) {
          expect(o.status, `${mode} ${o.id} (${o.label}): ${answerSummary([o])}`).toBe(200);
          if (o.route === 'chat/stream') expect(o.events.at(-1)).toBe('done');
        } else {
          expect([o.status, o.errorType, o.retryAfter], `${mode} ${o.id} (${o.label})`).toEqual([503, 'store_unavailable', '1']);
        }
      }
    }
    // Not vacuous: both hangs had requests in their first half, on both gateways.
    expect(checkedInHangs, 'requests that started in the first half of a hang').toBeGreaterThan(20);
  });

  it('afterwards: both alive and ready, every answered request in both audit sinks, memory back to its level, no raw key in Redis', async () => {
    for (const mode of MODES) {
      const gateway = gateways.get(mode)!;
      expect(gateway.alive()).toBe(true);
      await waitFor(`${mode} /readyz`, async () => (await fetch(`${gateway.adminUrl}/readyz`)).status === 200, 5_000);
      const outcomes = outcomesOf(mode);
      const ids = answered(outcomes).map((o) => o.id);
      // The spool replays on a backoff (up to 10 s between probes).
      const stream = await waitFor(
        `${mode}: every answered request in the Redis stream`,
        async () => {
          const records = await readAuditStream(inspect, `${PREFIX}audit:${mode}`);
          const seen = new Set(records.map((r) => r.request_id));
          return ids.every((id) => seen.has(id)) ? records : undefined;
        },
        15_000,
      ).catch(() => readAuditStream(inspect, `${PREFIX}audit:${mode}`));
      const file = await readAuditFile(join(dir, `${mode}-audit.jsonl`));
      const fileCheck = checkAudit(file, outcomes, [`rd-${mode}`]);
      const streamCheck = checkAudit(stream, outcomes, [`rd-${mode}`]);
      const after = await gateway.sample();
      const before = baselines.get(mode)!;
      const retainedAfter = await gateway.retained();
      const retainedBefore = retainedBaselines.get(mode)!;
      const retainedText = `retained after a full GC: heap ${(retainedBefore.heapUsedBytes / MB).toFixed(1)} → ${(retainedAfter.heapUsedBytes / MB).toFixed(1)} MB, external ${(retainedBefore.externalBytes / MB).toFixed(1)} → ${(retainedAfter.externalBytes / MB).toFixed(1)} MB`;
      reportRow({
        fault: `Redis faults, all phases (${mode})`,
        answered: `${ids.length} answered`,
        affected: `${outcomes.filter((o) => o.status !== 200).length}/${outcomes.length}`,
        auditLost: `${fileCheck.missing.length} (file), ${streamCheck.missing.length} (stream; ${stream.length - new Set(stream.map((r) => r.id)).size} duplicates, allowed)`,
        memory: `rss ${(before.rssBytes / MB).toFixed(0)} → ${(after.rssBytes / MB).toFixed(0)} MB (not a leak measure: scripts/inspector-gc.mjs says why), ${retainedText}, fds ${before.openFds} → ${after.openFds}`,
      });
      expect(fileCheck.missing).toEqual([]);
      expect(fileCheck.duplicated).toEqual([]);
      expect(streamCheck.missing).toEqual([]);
      expect(streamCheck.strangers).toEqual([]);
      expect(after.openFds, `${describeSample(before)} → ${describeSample(after)}`).toBeLessThan(before.openFds + 30);
      // No leak: what survives a full collection is back near its level before the faults.
      expect(retainedAfter.heapUsedBytes + retainedAfter.externalBytes - retainedBefore.heapUsedBytes - retainedBefore.externalBytes, retainedText).toBeLessThan(RETAINED_GROWTH_BOUND);

      const errors = outcomes.filter((o) => o.errorType).map((o) => o.text!);
      expect(revealingErrorBodies(errors, [`:${redis.port}`])).toEqual([]);
      expect(gateway.output()).not.toContain('unhandled error in request pipeline');
    }

    // Every key in Redis (names and values): limiter buckets, key records, audit streams.
    const { names, text } = await dumpRedis(inspect);
    expect(names.some((n) => n.startsWith(`${PREFIX}rl:`))).toBe(true);
    const logs = [...gateways.values()].map((g) => g.output()).join('\n');
    expect(findSecrets({ 'redis key names': names.join('\n'), 'redis values': text, logs }, [key])).toEqual([]);
  });
});
