// A whole answer reaches the client only after its audit record's journal write (decision
// 0022): the gateway on a real socket in front of a real runner, with an audit log that
// holds the "journal write" until the test releases it. A JSON answer carries the runner's
// Content-Length, so the client holds a whole answer the moment its last byte is out: that
// byte must wait with the response's end. (The SIGKILL fault run lost records exactly here:
// the last chunk went out with res.write(), before res.end() waited for the journal.)
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AuditLog, AuditRecord } from '../../src/audit/audit-record.js';
import { ManualClock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/load-config.js';
import { GatewayRuntime } from '../../src/http/gateway-runtime.js';
import { createGatewayServer, type GatewayServer } from '../../src/http/gateway-server.js';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { CACHED_TOKEN, FakeAuthenticator, SCALE_KEY } from '../helpers/pipeline-fakes.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** An audit log whose "journal write" happens when the test says (whenDurable's callbacks are held). */
class HeldAuditLog implements AuditLog {
  readonly records: AuditRecord[] = [];
  held: (() => void)[] = [];
  record(record: AuditRecord): void {
    this.records.push(record);
  }
  whenDurable(callback: () => void): void {
    this.held.push(callback);
  }
  release(): void {
    const held = this.held;
    this.held = [];
    for (const callback of held) callback();
  }
  async close(): Promise<void> {}
}

const PART_ONE = '{"response":"first half of the answer, ';
const PART_TWO = 'second half","tool_calls":[],"metadata":{"tokens_used":4}}';
const BODY = PART_ONE + PART_TWO;

let upstream: FakeUpstream;
let runtime: GatewayRuntime;
let gateway: GatewayServer;
let port: number;
const audit = new HeldAuditLog();
const sockets: Socket[] = [];

beforeAll(async () => {
  upstream = await startFakeUpstream();
  const config = parseConfig({ agents: { support: { upstream: upstream.baseUrl } }, plans: { scale: { windows: [] } } }, 'test', {});
  runtime = new GatewayRuntime(config);
  const authenticator = new FakeAuthenticator();
  authenticator.cached.set(CACHED_TOKEN, SCALE_KEY);
  const clock = new ManualClock(Date.parse('2026-01-02T03:04:05.000Z'));
  gateway = createGatewayServer({ runtime, authenticator, rateLimiter: new MemoryRateLimiter({ clock }), auditLog: audit, logger: pino({ level: 'silent' }), clock });
  gateway.server.listen(0, '127.0.0.1');
  await once(gateway.server, 'listening');
  port = (gateway.server.address() as AddressInfo).port;
});

afterEach(() => {
  audit.release();
  for (const socket of sockets.splice(0)) socket.destroy();
});

afterAll(async () => {
  gateway?.closeAll();
  await new Promise((resolve) => gateway?.server.close(resolve));
  await runtime?.close();
  await upstream?.close();
});

/** One POST /chat on a raw socket; `received()` is every byte the client has so far. */
function post(requestId: string): { received: () => string } {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const body = '{"message":"hi"}';
  socket.write(
    `POST /agents/support/api/v1/chat HTTP/1.1\r\nHost: gw.test\r\nAuthorization: ${CACHED_TOKEN}\r\nContent-Type: application/json\r\n` +
      `X-Request-Id: ${requestId}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  return { received: () => text };
}

/** The body of a whole Content-Length answer in `text`, or undefined while it is incomplete. */
function wholeBody(text: string): string | undefined {
  const split = text.indexOf('\r\n\r\n');
  if (split === -1) return undefined;
  const length = /\r\ncontent-length: (\d+)\r\n/i.exec(text.slice(0, split + 2));
  if (!length) return undefined;
  const body = text.slice(split + 4);
  return body.length >= Number(length[1]) ? body.slice(0, Number(length[1])) : undefined;
}

/**
 * Loopback delivers a write into the peer's receive queue during the write itself, so a few
 * turns of this process's loop read everything the gateway has handed to its socket.
 */
async function readWhatWasSent(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    await sleep(20);
  }
}

describe('a JSON answer with a Content-Length (decision 0022)', () => {
  it('one chunk: nothing of the answer reaches the client before its record is in the journal', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) });
      res.end(BODY);
    });
    const client = post('one-chunk');
    await waitFor('the record, waiting for its journal write', () => audit.held.length === 1, 10_000, 5);
    expect(audit.records.at(-1)?.request_id).toBe('one-chunk');
    await readWhatWasSent();
    expect(wholeBody(client.received()), 'the client holds the whole answer before the journal write').toBeUndefined();

    audit.release();
    const body = await waitFor('the whole answer', () => wholeBody(client.received()), 10_000, 5);
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(body).toBe(BODY);
  });

  it('two chunks: the first is relayed as it comes, the last waits for the journal write', async () => {
    let sendRest: (() => void) | undefined;
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) });
      res.write(PART_ONE);
      sendRest = () => res.end(PART_TWO);
    });
    const client = post('two-chunks');
    await waitFor('the runner to send its first half', () => sendRest, 10_000, 5);
    await readWhatWasSent();
    sendRest!();
    await waitFor('the record, waiting for its journal write', () => audit.held.length === 1, 10_000, 5);
    await readWhatWasSent();
    // The head and the first half are out (held back only until the next chunk came); the rest is not.
    expect(client.received()).toContain(PART_ONE);
    expect(wholeBody(client.received()), 'the client holds the whole answer before the journal write').toBeUndefined();

    audit.release();
    expect(await waitFor('the whole answer', () => wholeBody(client.received()), 10_000, 5)).toBe(BODY);
    expect(audit.records.at(-1)).toMatchObject({ request_id: 'two-chunks', status: 200, outcome: 'ok', tokens_used: 4, bytes_out: Buffer.byteLength(BODY) });
  });
});
