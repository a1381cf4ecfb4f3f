// Issue 45, H3-05: a cost budget is not escaped by leaving a stream before `done` when the price
// comes from the model `done` would name. The runner's stream names its model only in `done`;
// pricing lists that model and no `default`, and the agent declares no model: a client that
// leaves early is charged its relayed tokens at the highest price that could apply.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const STREAM = '/agents/runner/api/v1/chat/stream';
const timers = new Set<NodeJS.Timeout>();
let upstream: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startFakeUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // Tokens until the client leaves; `done` (naming the priced model) never comes in time.
    const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write('event: token\ndata: {"content":"word "}\n\n')), 10);
    timers.add(timer);
    res.once('close', () => clearInterval(timer));
  });
  gateway = await startTestGateway({
    agents: { runner: upstream.baseUrl },
    config: { pricing: { 'big-model': 1 }, plans: { tiny: { windows: [{ requests: 100, per: '1m' }], cost: [{ usd: 0.000001, per: '1d' }] } } },
  });
});

afterAll(async () => {
  for (const timer of timers) clearInterval(timer);
  await gateway?.close();
  await upstream?.close();
});

async function readAndLeave(key: string, events: number): Promise<number> {
  const abort = new AbortController();
  const response = await fetch(`${gateway.url}${STREAM}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ message: 'hi' }),
    signal: abort.signal,
  });
  if (response.status !== 200) {
    await response.text();
    return response.status;
  }
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while ((text.match(/event: token/g) ?? []).length < events) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  abort.abort();
  return 200;
}

describe('a stream left before done, priced by the model done would name', () => {
  it('is charged at the highest price that could apply, so the tiny cost budget is spent', async () => {
    const { rawKey } = await gateway.createKey({ plan: 'tiny' });
    expect(await readAndLeave(rawKey, 5)).toBe(200);
    // The charge is batched after the response closes: wait until it lands.
    const refused = await waitFor(
      'the cost budget spent',
      async () => {
        const res = await postChat(gateway.url, STREAM, rawKey, { message: 'hi' }, {}).catch(() => undefined);
        if (res === undefined) return undefined;
        if (res.status === 200) {
          await res.body?.cancel();
          return undefined;
        }
        return (await res.json()) as { error: { type: string } };
      },
      10_000,
      200,
    );
    expect(refused.error.type).toBe('cost_budget_exceeded');
  });
});
