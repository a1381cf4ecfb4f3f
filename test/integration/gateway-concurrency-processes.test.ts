// Two gateway PROCESSES on one Redis share one concurrency cap (docs/rate-limits.md
// "Concurrency caps"): under 200 concurrent stream requests split across both, exactly the
// cap's worth is admitted and every other one is refused concurrency_limit_exceeded; the
// holder refreshes its slots; a SIGKILLed holder's slots are freed once their lease runs out.
// Keys are made with the built CLI's `keys create --limits '<json>'`.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { request, type Dispatcher } from 'undici';
import { stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { builtCliOutput } from '../helpers/cli.js';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { useSharedRedisGateways } from '../helpers/shared-redis-gateways.js';
import { sleep } from '../helpers/wait.js';

const PREFIX = 'gwccproc:';
const STREAM = '/agents/support/api/v1/chat/stream';
const CAP = 20;
const REQUESTS = 200;
const PLANS = {
  streaming: { windows: [{ requests: 100000, per: '1m' }], concurrency: { streams: CAP } },
  // The key below narrows this with its own limits (2 streams, a 2 s lease).
  wide: { concurrency: { streams: 50 } },
};

/** Streams the runner holds open until the test ends them. */
const open: ServerResponse[] = [];

const shared = useSharedRedisGateways({
  prefix: PREFIX,
  plans: PLANS,
  upstream: (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('event: token\ndata: {"content":"Hi"}\n\n');
    open.push(res);
  },
  connections: 256,
});

// Runs before the fixture's close (registered after it): the runner's open streams end before the gateways are killed.
afterAll(() => {
  endAll();
});

function endAll(): void {
  for (const res of open.splice(0)) res.end('event: done\ndata: {"tokens_used":1,"latency_ms":1}\n\n');
}

/** `keys create` of the built CLI, as an operator runs it; returns the raw key. */
async function createKeyWithCli(account: string, plan: string, limits?: string): Promise<string> {
  const configPath = join(shared.dir, 'cli.yaml');
  await writeFile(configPath, stringify(shared.config('cli')));
  const args = ['keys', 'create', '--config', configPath, '--account', account, '--plan', plan, '--agent', 'support', '--json'];
  if (limits !== undefined) args.push('--limits', limits);
  const stdout = await builtCliOutput(args);
  return (JSON.parse(stdout) as { key: string }).key;
}

interface Opened {
  status: number;
  type: string | undefined;
  body: Dispatcher.ResponseData['body'];
}

/** Resolves at the response headers: a 200 stays open (its body is read later), a refusal is read. */
async function openStream(gateway: GatewayProcess, key: string): Promise<Opened> {
  const response = await request(`${gateway.url}${STREAM}`, {
    method: 'POST',
    dispatcher: shared.dispatcher,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{"message":"hi"}',
  });
  if (response.statusCode === 200) return { status: 200, type: undefined, body: response.body };
  const type = (JSON.parse(await response.body.text()) as { error: { type: string } }).error.type;
  return { status: response.statusCode, type, body: response.body };
}

function slotsKey(account: string): string {
  return `${PREFIX}streams:{account:${account}}`;
}

async function waitForSlots(account: string, expected: number): Promise<number> {
  let held = -1;
  for (let i = 0; i < 200 && held !== expected; i += 1) {
    held = await shared.inspect.zcard(slotsKey(account));
    if (held !== expected) await sleep(25);
  }
  return held;
}

describe(`two gateway processes, one cap of ${CAP} streams`, () => {
  it(`share it exactly under ${REQUESTS} concurrent stream requests, and free every slot when the streams end`, async () => {
    const key = await createKeyWithCli('shared-streams', 'streaming');
    const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => openStream(shared.gateways[i % 2]!, key)));
    const admitted = answers.filter((a) => a.status === 200);
    expect(admitted.length).toBe(CAP);
    expect(new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.type}`))).toEqual(new Set(['429 concurrency_limit_exceeded']));
    expect(await shared.inspect.zcard(slotsKey('shared-streams'))).toBe(CAP);
    for (let i = 0; i < 200 && open.length < CAP; i += 1) await sleep(10);
    expect(open.length).toBe(CAP);

    endAll();
    await Promise.all(admitted.map((a) => a.body.text()));
    expect(await waitForSlots('shared-streams', 0)).toBe(0);
    // And the cap is whole again: the next burst admits exactly CAP once more.
    const again = await Promise.all(Array.from({ length: 2 * CAP }, (_, i) => openStream(shared.gateways[i % 2]!, key)));
    expect(again.filter((a) => a.status === 200).length).toBe(CAP);
    endAll();
    await Promise.all(again.filter((a) => a.status === 200).map((a) => a.body.text()));
    expect(await waitForSlots('shared-streams', 0)).toBe(0);
  }, 60_000);
});

describe("a key's own cap (keys create --limits), a 2 s lease", () => {
  it('is refreshed by its holder, and a SIGKILLed holder’s slots are freed once the lease runs out', async () => {
    const key = await createKeyWithCli('leased', 'wide', '{"concurrency":{"streams":2,"lease":"2s"}}');
    const [holder, survivor] = shared.gateways as [GatewayProcess, GatewayProcess];
    const held = await Promise.all([openStream(holder, key), openStream(holder, key)]);
    expect(held.map((h) => h.status)).toEqual([200, 200]);
    // The plan allows 50: the key's own 2 apply.
    expect(await openStream(survivor, key)).toMatchObject({ status: 429, type: 'concurrency_limit_exceeded' });

    // The holder pushes the expiry on (every lease/3): seen as a later score, whenever it comes.
    const firstScores = (await shared.inspect.zrange(slotsKey('leased'), 0, -1, 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number);
    expect(firstScores).toHaveLength(2);
    let refreshed = false;
    for (let i = 0; i < 400 && !refreshed; i += 1) {
      const scores = (await shared.inspect.zrange(slotsKey('leased'), 0, -1, 'WITHSCORES')).filter((_, j) => j % 2 === 1).map(Number);
      refreshed = scores.length === 2 && scores.every((score) => score > Math.max(...firstScores));
      if (!refreshed) await sleep(25);
    }
    expect(refreshed).toBe(true);
    const holderMembers = await shared.inspect.zrange(slotsKey('leased'), 0, -1);

    await holder.stop('SIGKILL');
    // Nobody refreshes them now: within the lease (2 s; the loop allows far more) the survivor admits again.
    let admitted: Opened | undefined;
    for (let i = 0; i < 300 && admitted === undefined; i += 1) {
      const attempt = await openStream(survivor, key);
      if (attempt.status === 200) admitted = attempt;
      else {
        expect(attempt).toMatchObject({ status: 429, type: 'concurrency_limit_exceeded' });
        await sleep(100);
      }
    }
    expect(admitted?.status).toBe(200);
    const members = await shared.inspect.zrange(slotsKey('leased'), 0, -1);
    expect(members.filter((m) => holderMembers.includes(m))).toEqual([]);
    expect(members).toHaveLength(1);
    endAll();
    await admitted!.body.text();
  }, 60_000);
});
