// The chat pipeline stage by stage, without a socket: each test hands one request to the
// pipeline through in-memory stand-ins (pipeline-fakes.ts) and reads the answer, the audit
// record and the log line it leaves.
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors.js';
import {
  CACHED_TOKEN,
  CHAT_BODY,
  Runner,
  STORED_TOKEN,
  WaitingRateLimiter,
  send,
  settle,
  setUpPipeline,
  type Exchange,
  type PipelineSetup,
} from '../../helpers/pipeline-fakes.js';

let setup: PipelineSetup;

afterEach(async () => {
  await setup.close();
});

function errorOf(exchange: Exchange): { type: string; request_id: string } {
  return (JSON.parse(exchange.res.body) as { error: { type: string; request_id: string } }).error;
}

/** Sends a body the pipeline accepts; the runner then gets the request. */
async function forwarded(exchange: Exchange): Promise<Runner> {
  await settle();
  exchange.req.sendBody(CHAT_BODY);
  const dispatched = setup.pool.dispatched.at(-1);
  if (!dispatched) throw new Error('nothing was dispatched');
  return new Runner(dispatched.handler);
}

describe('route stage', () => {
  it('answers 404 for a path that is no chat route, before asking for a key', async () => {
    setup = setUpPipeline();
    const exchange = send(setup, { url: '/agents/support/api/v2/chat' });
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(404);
    expect(errorOf(exchange).type).toBe('not_found');
    expect(setup.authenticator.lookups).toBe(0);
    // No key, no audit record; the log line still says what happened.
    expect(setup.auditLog.records).toEqual([]);
    expect(setup.logLines()).toMatchObject([{ status: 404, outcome: 'invalid_request', agent: 'none', route: 'none', error: 'not_found' }]);
  });

  it('answers 405 with Allow for another method on a chat route', async () => {
    setup = setUpPipeline();
    const exchange = send(setup, { method: 'GET' });
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(405);
    expect(exchange.res.header('Allow')).toBe('POST');
  });

  it('carries the request id and a trace id on every answer, rejections included', async () => {
    setup = setUpPipeline();
    const exchange = send(setup, { url: '/nowhere', headers: { 'x-request-id': 'req-given-by-client' } });
    await exchange.closed;
    expect(exchange.res.header('X-Request-Id')).toBe('req-given-by-client');
    expect(errorOf(exchange).request_id).toBe('req-given-by-client');
    expect(setup.logLines()[0]!.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('key stage', () => {
  it.each([
    ['takes a cached key without a lookup', CACHED_TOKEN, 0],
    ['waits for a lookup when the key is not cached, then goes on', STORED_TOKEN, 1],
  ])('%s', async (_name, token, lookups) => {
    setup = setUpPipeline();
    const exchange = send(setup, { headers: { authorization: token } });
    await forwarded(exchange);
    expect(setup.authenticator.lookups).toBe(lookups);
    expect(setup.pool.dispatched).toHaveLength(1);
  });

  it('answers the authenticator refusal with 401 and WWW-Authenticate, and reads no body', async () => {
    setup = setUpPipeline();
    const exchange = send(setup, { headers: { authorization: 'Bearer unknown' } });
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(401);
    expect(exchange.res.header('WWW-Authenticate')).toBe('Bearer');
    expect(errorOf(exchange).type).toBe('invalid_api_key');
    expect(exchange.req.listenerCount('data')).toBe(0);
    expect(setup.logLines()).toMatchObject([{ status: 401, outcome: 'invalid_request', agent: 'support', route: 'chat' }]);
  });
});

describe('limit stage', () => {
  it('goes straight to the body for a plan without windows, with no rate-limit headers', async () => {
    setup = setUpPipeline();
    const exchange = send(setup);
    await settle();
    expect(exchange.req.listenerCount('data')).toBe(1);
    (await forwarded(exchange)).answer(200);
    expect(exchange.res.header('X-RateLimit-Limit')).toBeUndefined();
  });

  it('counts each request, puts its headers on the answer, and refuses the one over the limit with 429', async () => {
    setup = setUpPipeline();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const exchange = send(setup, { headers: { authorization: 'Bearer limited' } });
      await settle();
      if (exchange.res.headersSent) {
        await exchange.closed;
        statuses.push(exchange.res.statusCode);
        expect(exchange.res.header('Retry-After')).toMatch(/^\d+$/);
        expect(exchange.res.header('X-RateLimit-Remaining')).toBe('0');
        expect(errorOf(exchange).type).toBe('rate_limit_exceeded');
        continue;
      }
      const runner = (await forwarded(exchange)).answer(200);
      expect(exchange.res.header('X-RateLimit-Remaining')).toBe(String(1 - i));
      runner.end();
      await exchange.closed;
      statuses.push(exchange.res.statusCode);
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(setup.auditLog.records.map((r) => r.outcome)).toEqual(['ok', 'ok', 'rate_limited']);
  });

  it('waits for a limiter that cannot decide at once, then goes on', async () => {
    let waiting: WaitingRateLimiter | undefined;
    setup = setUpPipeline({ rateLimiter: (memory) => (waiting = new WaitingRateLimiter(memory)) });
    const exchange = send(setup, { headers: { authorization: 'Bearer limited' } });
    await forwarded(exchange);
    expect(waiting!.waits).toBe(1);
    expect(setup.pool.dispatched).toHaveLength(1);
  });

  it('answers 500 when the key names a plan the config does not have', async () => {
    setup = setUpPipeline();
    setup.authenticator.cached.set('Bearer orphan', { keyId: 'key_orphan', account: 'acme', plan: 'gone' });
    const exchange = send(setup, { headers: { authorization: 'Bearer orphan' } });
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(500);
    expect(errorOf(exchange).type).toBe('internal_error');
    expect(setup.auditLog.records).toMatchObject([{ key_id: 'key_orphan', status: 500, outcome: 'error' }]);
  });
});

describe('body stage', () => {
  it('refuses another media type with 415 before reading', async () => {
    setup = setUpPipeline();
    const exchange = send(setup, { headers: { 'content-type': 'text/plain' } });
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(415);
    expect(exchange.req.listenerCount('data')).toBe(0);
    expect(setup.auditLog.records).toMatchObject([{ status: 415, outcome: 'invalid_request' }]);
  });

  it('refuses a declared body over the limit with 413 and closes the connection', async () => {
    setup = setUpPipeline({ config: { limits: { max_body_bytes: 64 } } });
    const exchange = send(setup, { headers: { 'content-length': '65' } });
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(413);
    expect(exchange.res.header('Connection')).toBe('close');
    expect(exchange.res.shouldKeepAlive).toBe(false);
    expect(setup.auditLog.records).toMatchObject([{ status: 413, outcome: 'invalid_request' }]);
  });

  it('answers 400 for a body that is not JSON, and forwards nothing', async () => {
    setup = setUpPipeline();
    const exchange = send(setup);
    await settle();
    exchange.req.sendBody('{"message":');
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(400);
    expect(errorOf(exchange).type).toBe('invalid_json');
    expect(setup.pool.dispatched).toEqual([]);
    expect(setup.auditLog.records).toMatchObject([{ status: 400, outcome: 'invalid_request', bytes_in: 11 }]);
  });

  it('answers nothing when the client leaves before its body, and records client_closed', async () => {
    setup = setUpPipeline();
    const exchange = send(setup);
    await settle();
    exchange.res.clientLeaves();
    await exchange.closed;
    await settle();
    expect(exchange.res.written).toEqual([]);
    expect(setup.auditLog.records).toMatchObject([{ status: 499, outcome: 'client_closed' }]);
  });
});

describe('forward stage', () => {
  it('sends the body and the gateway identity headers to the agent, never the client credentials', async () => {
    setup = setUpPipeline();
    const exchange = send(setup, { headers: { 'x-request-id': 'req-1', 'x-key-id': 'forged' } });
    await forwarded(exchange);
    const { options } = setup.pool.dispatched[0]!;
    expect(options.method).toBe('POST');
    expect(options.path).toBe('/api/v1/chat');
    expect(String(options.body)).toBe(CHAT_BODY);
    const headers = options.headers as string[];
    const sent = new Map<string, string>();
    for (let i = 0; i < headers.length; i += 2) sent.set(headers[i]!.toLowerCase(), headers[i + 1]!);
    expect(sent.get('x-request-id')).toBe('req-1');
    expect(sent.get('x-key-id')).toBe('key_scale');
    expect(sent.get('x-account-id')).toBe('acme');
    expect(sent.get('x-forwarded-for')).toBe('10.0.0.7');
    expect(sent.get('traceparent')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(sent.has('authorization')).toBe(false);
  });

  it('relays the answer, reads its tokens_used, and records the whole request', async () => {
    setup = setUpPipeline();
    const exchange = send(setup, { headers: { 'x-request-id': 'req-2' } });
    const answer = Buffer.from('{"reply":"hi","metadata":{"tokens_used":12}}');
    (await forwarded(exchange)).answer(200, { 'content-type': 'application/json', 'x-request-id': 'upstream-id' }).send(answer).end();
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(200);
    expect(exchange.res.body).toBe(answer.toString());
    expect(exchange.res.header('X-Request-Id')).toBe('req-2');
    expect(setup.auditLog.records).toMatchObject([
      {
        // The record's own id is the gateway's (a UUIDv7); the client's id is request_id.
        id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        request_id: 'req-2',
        key_id: 'key_scale',
        account: 'acme',
        plan: 'scale',
        agent: 'support',
        route: 'chat',
        status: 200,
        outcome: 'ok',
        tokens_used: 12,
        bytes_in: CHAT_BODY.length,
        bytes_out: answer.length,
        client_ip: '10.0.0.7',
        user_id: 'u1',
        session_id: 's1',
      },
    ]);
    expect(setup.logLines()).toMatchObject([{ request_id: 'req-2', status: 200, outcome: 'ok', tokens_used: 12 }]);
  });

  it('relays a runner error status unchanged, recorded as upstream_error', async () => {
    setup = setUpPipeline();
    const exchange = send(setup);
    (await forwarded(exchange)).answer(502, { 'content-type': 'text/plain' }).send('runner down').end();
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(502);
    expect(exchange.res.body).toBe('runner down');
    expect(setup.auditLog.records).toMatchObject([{ status: 502, outcome: 'upstream_error', tokens_used: null }]);
  });

  it('answers 503 agent_unavailable when the runner cannot be reached, recorded by its failure kind', async () => {
    setup = setUpPipeline();
    const exchange = send(setup);
    (await forwarded(exchange)).fail('connect ECONNREFUSED', 'ECONNREFUSED');
    // Answered outside undici's callback.
    expect(exchange.res.headersSent).toBe(false);
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(503);
    expect(exchange.res.header('Retry-After')).toBe('2');
    expect(errorOf(exchange).type).toBe('agent_unavailable');
    expect(setup.auditLog.records).toMatchObject([{ status: 503, outcome: 'upstream_error' }]);
    expect(setup.logLines()).toMatchObject([{ upstream_failure: 'connect', error: 'agent_unavailable' }]);
  });

  it('cuts a relayed answer that breaks off, recorded by its failure kind', async () => {
    setup = setUpPipeline();
    const exchange = send(setup);
    (await forwarded(exchange)).answer(200).send('{"reply":').fail('other side closed', 'UND_ERR_SOCKET');
    await exchange.closed;
    expect(exchange.res.destroyed).toBe(true);
    expect(setup.auditLog.records).toMatchObject([{ status: 200, outcome: 'upstream_error' }]);
    expect(setup.logLines()).toMatchObject([{ upstream_failure: 'reset' }]);
  });

  it('stops the runner when the client leaves mid-answer', async () => {
    setup = setUpPipeline();
    const exchange = send(setup);
    const runner = (await forwarded(exchange)).answer(200);
    exchange.res.clientLeaves();
    await exchange.closed;
    expect(runner.controller.aborted).toBe(true);
    expect(setup.auditLog.records).toMatchObject([{ status: 200, outcome: 'client_closed' }]);
  });

  it('answers 503 when the agent has no upstream any more', async () => {
    setup = setUpPipeline();
    setup.runtime.pools.upstreams = () => undefined;
    const exchange = send(setup);
    await settle();
    exchange.req.sendBody(CHAT_BODY);
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(503);
    expect(exchange.res.header('Retry-After')).toBe('1');
    expect(setup.auditLog.records).toMatchObject([{ status: 503, outcome: 'error' }]);
  });
});

describe('finish stage', () => {
  it('writes one audit record and one log line per request, when the response closes', async () => {
    setup = setUpPipeline();
    const exchange = send(setup);
    const runner = (await forwarded(exchange)).answer(200);
    expect(setup.auditLog.records).toEqual([]);
    runner.end();
    expect(setup.auditLog.records).toEqual([]);
    await exchange.closed;
    await settle();
    expect(setup.auditLog.records).toHaveLength(1);
    expect(setup.logLines()).toHaveLength(1);
  });

  it('answers an unexpected exception with 500 and records it as error', async () => {
    setup = setUpPipeline();
    setup.authenticator.authenticateNow = () => {
      throw new TypeError('a bug');
    };
    const exchange = send(setup);
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(500);
    expect(errorOf(exchange).type).toBe('internal_error');
    expect(setup.logLines()).toMatchObject([{ status: 500, outcome: 'error', error: 'internal_error' }]);
  });

  it('keeps a GatewayError thrown by a stage as the answer', async () => {
    setup = setUpPipeline();
    setup.authenticator.authenticateNow = () => {
      throw new GatewayError('store_unavailable', { retryAfterSeconds: 1 });
    };
    const exchange = send(setup);
    await exchange.closed;
    expect(exchange.res.statusCode).toBe(503);
    expect(errorOf(exchange).type).toBe('store_unavailable');
    expect(setup.logLines()).toMatchObject([{ status: 503, outcome: 'error', error: 'store_unavailable' }]);
  });
});
