// A /chat answer dripped a byte at a time has an overall deadline (issue 33, worth-fixing
// list): stream.max_duration from its head, as a stream has. The idle timeout never fires on
// such a runner; the connection is cut at max_duration and the audit says timeout.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditFile } from '../helpers/audit-records.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

let upstream: FakeUpstream;
let gateway: TestGateway;
const timers = new Set<NodeJS.Timeout>();

beforeAll(async () => {
  upstream = await startFakeUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' });
    res.write('{"response":"');
    const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write('a')), 100);
    timers.add(timer);
    res.once('close', () => clearInterval(timer));
  });
  gateway = await startTestGateway({ agents: { support: upstream.baseUrl }, config: { stream: { idle_timeout: '5s', max_duration: '2s' } } });
});

afterAll(async () => {
  for (const timer of timers) clearInterval(timer);
  await gateway?.close();
  await upstream?.close();
});

describe('a /chat answer that never ends', () => {
  it('is cut at stream.max_duration although the runner never goes idle; audited as timeout', async () => {
    const { rawKey } = await gateway.createKey({ account: 'drip' });
    const answer = await postChat(gateway.url, '/agents/support/api/v1/chat', rawKey, { message: 'hi' });
    expect(answer.status).toBe(200);
    const requestId = answer.headers.get('x-request-id');
    await expect(answer.text()).rejects.toThrow();
    const record = await waitFor('the audit record', async () => (await readAuditFile(join(gateway.dir, 'audit.jsonl'))).find((r) => r.request_id === requestId), 10_000);
    expect(record.outcome).toBe('timeout');
  });
});
