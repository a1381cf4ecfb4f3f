// Security checks, as properties over hostile requests (the fault suites sweep their own runs
// for the raw key and for revealing error bodies too):
// - hop-by-hop headers, anything `Connection` names, and credentials never reach the runner;
// - a client's X-Forwarded-For is believed only with `listen.trust_proxy`, and then only its
//   entries right of the client (and cannot dodge the failed-attempt throttle otherwise);
// - the admin listener binds to loopback by default;
// - no raw key in logs, audit records or what the runner sees, wherever the client put it;
// - error answers carry no stack trace or internal address, even a 500.
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/audit/audit-record.js';
import { generateApiKey } from '../../src/keys/key-format.js';
import { startGateway } from '../../src/gateway.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { refusingPort } from '../helpers/free-port.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startFaultRunner, type FaultRunner } from '../helpers/faults/fault-runner.js';
import { findSecrets, revealingErrorBodies } from '../helpers/faults/leaks.js';
import { waitFor } from '../helpers/wait.js';
import { readAuditFile } from '../helpers/audit-records.js';

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'];
const ANY_KEY = /ha_[0-9A-Za-z]{38}/g;

let runner: FaultRunner;
let plain: TestGateway;
let trusting: TestGateway;
let key: string;
let trustingKey: string;

beforeAll(async () => {
  runner = await startFaultRunner();
  const agents = { ok: runner.baseUrl('ok'), refused: `http://127.0.0.1:${await refusingPort()}/api/v1` };
  [plain, trusting] = await Promise.all([startTestGateway({ agents }), startTestGateway({ agents, config: { listen: { trust_proxy: true } } })]);
  ({ rawKey: key } = await plain.createKey());
  ({ rawKey: trustingKey } = await trusting.createKey());
});

afterAll(async () => {
  await plain?.close();
  await trusting?.close();
  await runner?.close();
});

/** POST with exactly these headers (node:http, so hop-by-hop ones are sent as given). */
function rawPost(url: string, headers: Array<[string, string]>, body = '{"message":"hi"}'): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: Object.fromEntries(headers) }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('headers that must not cross the gateway (property)', () => {
  it('hop-by-hop headers, whatever Connection names, and credentials never reach the runner; other headers do, unchanged', async () => {
    const custom = fc.stringMatching(/^x-[a-z0-9]{1,8}$/);
    // No leading or trailing blanks: HTTP trims those (optional whitespace).
    const value = fc.stringMatching(/^[A-Za-z0-9,;=._-](?:[A-Za-z0-9 ,;=._-]{0,14}[A-Za-z0-9,;=._-])?$/);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(custom, value), { minLength: 1, maxLength: 6, selector: ([name]) => name }),
        fc.subarray(['keep-alive', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'upgrade', 'proxy-authenticate']),
        fc.nat(),
        fc.constantFrom('chat', 'chat/stream'),
        fc.constantFrom('Bearer', 'bearer', 'BEARER'),
        async (customs, hops, namedMask, route, scheme) => {
          const named = customs.filter((_, i) => (namedMask >> i) & 1).map(([name]) => name);
          const requestId = `sec-hop-${++n}`;
          const headers: Array<[string, string]> = [
            ['Authorization', `${scheme} ${key}`],
            ['Content-Type', 'application/json'],
            ['X-Request-Id', requestId],
            ['Connection', ['keep-alive', ...named].join(', ')],
            ...customs,
            ...hops.map((h): [string, string] => [h, h === 'te' ? 'trailers' : h === 'upgrade' ? 'websocket' : 'secret-hop-value']),
          ];
          const response = await rawPost(`${plain.url}/agents/ok/api/v1/${route}`, headers);
          expect(response.status).toBe(200);
          const seen = runner.upstream.requests.find((r) => r.headers['x-request-id'] === requestId)!;
          expect(seen).toBeDefined();
          for (const name of [...HOP_BY_HOP, 'authorization', ...named]) {
            // undici states its own connection management on its hop to the runner.
            if (name === 'connection') expect([undefined, 'keep-alive']).toContain(seen.headers.connection);
            else expect(seen.headers[name], name).toBeUndefined();
          }
          for (const [name, v] of customs) if (!named.includes(name)) expect(seen.headers[name]).toBe(v);
          expect(JSON.stringify(seen.headers)).not.toContain(key);
          expect(JSON.stringify(seen.headers)).not.toContain('secret-hop-value');
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('X-Forwarded-For (property)', () => {
  const address = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('unknown', '', ' ', 'evil"json', '127.0.0.1', '999.1.1.1'));
  const xff = fc.array(address, { minLength: 1, maxLength: 5 }).map((list) => list.join(', '));

  it('is ignored without trust_proxy: the peer address is logged, audited and forwarded', async () => {
    let n = 0;
    const ids: string[] = [];
    await fc.assert(
      fc.asyncProperty(xff, async (forwarded) => {
        const id = `sec-xff-plain-${++n}`;
        ids.push(id);
        const response = await postChat(plain.url, '/agents/ok/api/v1/chat', key, { message: 'hi' }, { 'x-forwarded-for': forwarded, 'x-request-id': id });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        const seen = runner.upstream.requests.find((r) => r.headers['x-request-id'] === id)!;
        expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
      }),
      { numRuns: 40 },
    );
    const records = await auditRecords(plain, ids);
    for (const id of ids) expect(records.get(id)?.client_ip, id).toBe('127.0.0.1');
  });

  it('is read from the right with trust_proxy: true (one proxy): its last entry is the client, and only that entry and the peer reach the runner', async () => {
    let n = 0;
    const expected = new Map<string, string>();
    await fc.assert(
      fc.asyncProperty(xff, async (forwarded) => {
        const id = `sec-xff-trust-${++n}`;
        const response = await postChat(trusting.url, '/agents/ok/api/v1/chat', trustingKey, { message: 'hi' }, { 'x-forwarded-for': forwarded, 'x-request-id': id });
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        const seen = runner.upstream.requests.find((r) => r.headers['x-request-id'] === id)!;
        // The entry the proxy in front appended (the last); what the client wrote before it is not believed.
        const last = forwarded.split(',').at(-1)!.trim();
        const address = last.toLowerCase().startsWith('::ffff:') && isIP(last.slice(7)) === 4 ? last.slice(7) : last;
        const client = isIP(address) === 0 ? undefined : address;
        expect(seen.headers['x-forwarded-for']).toBe(client === undefined ? '127.0.0.1' : `${client}, 127.0.0.1`);
        expected.set(id, client ?? '127.0.0.1');
      }),
      { numRuns: 40 },
    );
    const records = await auditRecords(trusting, [...expected.keys()]);
    for (const [id, ip] of expected) expect(records.get(id)?.client_ip, id).toBe(ip);
  });

  it('cannot be rotated to dodge the failed-attempt throttle without trust_proxy', async () => {
    // Its own gateway: the address it blocks (127.0.0.1) stays blocked for a minute.
    const gateway = await startTestGateway({ agents: { ok: runner.baseUrl('ok') }, config: { keys: { failed_auth: { max_attempts: 5, per: '1m', block_for: '1m' } } } });
    try {
      const good = (await gateway.createKey()).rawKey;
      const answers: number[] = [];
      for (let i = 0; i < 8; i++) {
        const response = await postChat(gateway.url, '/agents/ok/api/v1/chat', generateApiKey().rawKey, { message: 'hi' }, { 'x-forwarded-for': `203.0.113.${i}` });
        answers.push(response.status);
        await response.arrayBuffer();
      }
      // max_attempts 5 per address: the 5th failure blocks 127.0.0.1, whatever the header said.
      expect(answers).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
      // Still blocked with the good key: the throttle runs before the lookup.
      const blocked = await postChat(gateway.url, '/agents/ok/api/v1/chat', good, { message: 'hi' }, { 'x-forwarded-for': '198.51.100.7' });
      expect(blocked.status).toBe(429);
      await blocked.arrayBuffer();
    } finally {
      await gateway.close();
    }
  });
});

describe('the admin listener', () => {
  it('binds to loopback when admin.host is not configured', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agentgw-sec-admin-'));
    const config = parseConfig(
      { listen: { host: '127.0.0.1', port: 0 }, admin: { port: 0 }, agents: { ok: { upstream: runner.baseUrl('ok') } }, keys: { file: join(dir, 'keys.json') }, audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl') } },
      'test',
      {},
    );
    expect(config.admin.host).toBe('127.0.0.1');
    const running = await startGateway(config, { logger: silentLogger });
    try {
      const port = running.adminPort!;
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      // The kernel's own view: every listening socket on that port is bound to 127.0.0.1.
      const listening = await listeningAddresses(port);
      expect(listening).toEqual(['127.0.0.1']);
    } finally {
      await running.close(200);
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('secrets and internals in answers, logs and records', () => {
  it('a raw key sent anywhere in a request never appears in the logs, the audit file or the headers the runner sees', async () => {
    const wrongAgentKey = (await plain.createKey({ agents: ['refused'] })).rawKey;
    const unknown = generateApiKey().rawKey;
    const typo = `${key.slice(0, 10)}${key[10] === 'A' ? 'B' : 'A'}${key.slice(11)}`;
    const attempts: Array<[string, Record<string, string>, string]> = [
      ['/agents/ok/api/v1/chat', { authorization: `bearer   ${key}  ` }, '{"message":"hi"}'],
      [`/agents/ok/api/v1/chat?api_key=${key}`, { authorization: `Bearer ${key}` }, '{"message":"hi"}'],
      ['/agents/ok/api/v1/chat', { authorization: `Bearer ${key}`, 'x-request-id': key }, '{"message":"hi"}'],
      ['/agents/ok/api/v1/chat', { authorization: `Bearer ${key}`, traceparent: key }, '{"message":"hi"}'],
      ['/agents/ok/api/v1/chat', { authorization: `Bearer ${key}` }, `{"message":"${key}","context":{"user_id":"u1"}}`],
      ['/agents/ok/api/v1/chat', { authorization: `Bearer ${key}` }, `{"message":"hi","tools":["${key}"]}`],
      ['/agents/ok/api/v1/chat', { authorization: `Bearer ${key}` }, `{"message":`],
      ['/agents/ok/api/v1/chat', { authorization: `Bearer ${wrongAgentKey}` }, '{"message":"hi"}'],
      ['/agents/ok/api/v1/chat', { authorization: `Bearer ${unknown}` }, '{"message":"hi"}'],
      ['/agents/ok/api/v1/chat', { authorization: `Bearer ${typo}` }, '{"message":"hi"}'],
      ['/agents/ok/api/v1/chat', { authorization: `Basic ${Buffer.from(`user:${key}`).toString('base64')}` }, '{"message":"hi"}'],
      [`/agents/${key}/api/v1/chat`, { authorization: `Bearer ${key}` }, '{"message":"hi"}'],
      ['/agents/refused/api/v1/chat/stream', { authorization: `Bearer ${key}` }, '{"message":"hi"}'],
    ];
    const ids: string[] = [];
    for (const [path, headers, body] of attempts) {
      const response = await postChat(plain.url, path, undefined, body, { 'content-type': 'application/json', ...headers });
      const id = response.headers.get('x-request-id')!;
      ids.push(id);
      await response.arrayBuffer();
    }
    const recorded = ids.filter((_, i) => [0, 1, 2, 3, 4, 5, 6, 12].includes(i));
    const all = await auditRecords(plain, recorded);
    const records = new Map(recorded.map((id) => [id, all.get(id)!]));
    const audit = JSON.stringify([...all.values()]);
    const logs = plain.logs.join('');
    const runnerHeaders = runner.upstream.requests.map((r) => JSON.stringify(r.headers)).join('\n');
    // Positive controls: the requests were logged and recorded.
    expect(logs).toContain(ids[0]!);
    expect(records.size).toBe(8);
    expect(findSecrets({ logs, audit, 'runner headers': runnerHeaders }, [key, wrongAgentKey, unknown, typo])).toEqual([]);
    expect(`${logs}\n${audit}`.match(ANY_KEY)).toBeNull();
  });

  it('error answers — a 500 included — carry no stack trace, path, error code or internal address', async () => {
    const orphan = (await plain.createKey({ plan: 'scale' })).rawKey;
    // A key whose plan the config no longer has: the gateway's own 500.
    const dir = plain.dir;
    const keysPath = join(dir, 'keys.json');
    const keys = JSON.parse(await readFile(keysPath, 'utf8')) as { keys: Array<{ plan: string }> };
    keys.keys.at(-1)!.plan = 'vanished';
    const { writeFile, rename } = await import('node:fs/promises');
    await writeFile(`${keysPath}.tmp`, JSON.stringify(keys));
    await rename(`${keysPath}.tmp`, keysPath);
    const internal = await waitFor(
      'the key file change to be seen',
      async () => {
        const response = await postChat(plain.url, '/agents/ok/api/v1/chat', orphan, { message: 'hi' });
        const body = await response.text();
        return response.status === 500 ? body : undefined;
      },
      5_000,
    );
    const bodies = [internal];
    for (const [path, body, headers] of [
      ['/agents/refused/api/v1/chat', '{"message":"hi"}', {}],
      ['/agents/refused/api/v1/chat/stream', '{"message":"hi"}', {}],
      ['/agents/ok/api/v1/chat', '{"message":', {}],
      ['/agents/ok/api/v1/chat', '{"message":"hi","temperature":"hot"}', {}],
      ['/agents/ok/api/v1/chat', '{"message":"hi"}', { 'content-type': 'text/plain' }],
      ['/agents/nobody/api/v1/chat', '{"message":"hi"}', {}],
      ['/../../etc/passwd', '{"message":"hi"}', {}],
    ] as Array<[string, string, Record<string, string>]>) {
      const response = await postChat(plain.url, path, key, body, headers);
      bodies.push(await response.text());
    }
    expect(JSON.parse(internal)).toMatchObject({ error: { type: 'internal_error' } });
    const runnerHost = new URL(runner.upstream.url).host;
    const refusedHost = new URL(plain.config.agents.get('refused')!.upstream).host;
    expect(revealingErrorBodies(bodies, [runnerHost, refusedHost, plain.dir])).toEqual([]);
  });
});

async function auditRecords(gateway: TestGateway, ids: string[]): Promise<Map<string, AuditRecord>> {
  return waitFor(
    'audit records',
    async () => {
      const records = new Map((await readAuditFile(join(gateway.dir, 'audit.jsonl'))).map((r) => [r.request_id, r]));
      return ids.every((id) => records.has(id)) ? records : undefined;
    },
    5_000,
  );
}

/** Local addresses (IPv4 dotted, or IPv6 hex) of the sockets listening on `port`, from /proc/net/tcp{,6}. */
async function listeningAddresses(port: number): Promise<string[]> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(file, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (!local || state !== '0A') continue;
      const [address, localPort] = local.split(':');
      if (localPort !== hexPort) continue;
      found.push(address!.length === 8 ? address!.match(/../g)!.reverse().map((h) => parseInt(h, 16)).join('.') : address!);
    }
  }
  return found;
}
