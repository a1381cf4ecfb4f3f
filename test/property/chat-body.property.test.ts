// The chat body validator against a model of docs/design.md, "Request body": every generated
// valid request is accepted with its context ids, and breaking exactly one rule is rejected as
// invalid_request naming exactly that field. Then the same through the gateway: 200 with the
// exact bytes upstream when the model says valid, 400 naming the field otherwise, and the
// runner never sees a body that failed. Arbitrary bytes are invalid_json or valid JSON, never a
// crash.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../src/config/schema.js';
import { GatewayError } from '../../src/errors.js';
import { parseJsonBody, validateChatRequest } from '../../src/http/validate-chat-request.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { referenceJsonShape } from '../helpers/reference-json-shape.js';

const TOOLS = ['search', 'calculator', 'weather'];
const MAX_TOKENS = 512;
const MAX_MESSAGE_CHARS = 40;
const agent: AgentConfig = { id: 'support', protocol: 'agent-chat', upstream: 'http://127.0.0.1:1/api/v1', host: undefined, headersTimeoutMs: 1_000, tools: new Set(TOOLS), maxTokens: MAX_TOKENS, upstreams: [{ url: 'http://127.0.0.1:1/api/v1', weight: 1 }], outlier: { consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000, maxEjectedPercent: 50 }, healthCheck: undefined };
const limits = { maxMessageChars: MAX_MESSAGE_CHARS };

type Body = Record<string, unknown>;

/** Characters counted as one each (code points), surrogate pairs included. */
const messageChar = fc.constantFrom('a', 'Z', ' ', 'é', '日', '🌍', '"', '\\', '\n', '\u0000');
const validBody: fc.Arbitrary<Body> = fc
  .record(
    {
      message: fc.array(messageChar, { minLength: 1, maxLength: MAX_MESSAGE_CHARS }).map((chars) => chars.join('')),
      context: fc.record({ user_id: fc.string({ maxLength: 10 }), session_id: fc.string({ maxLength: 10 }), locale: fc.string({ maxLength: 5 }) }, { requiredKeys: [] }),
      tools: fc.subarray(TOOLS),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      max_tokens: fc.integer({ min: 1, max: MAX_TOKENS }),
      stream_hint: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: ['message'] },
  )
  .map((body) => JSON.parse(JSON.stringify(body)) as Body);

interface Breakage {
  body: Body | unknown;
  param: string;
}

/** One rule broken on top of a valid body, with the field the answer must name. */
const brokenBody: fc.Arbitrary<Breakage> = fc.tuple(validBody, fc.nat({ max: 1_000 })).chain(([body, seed]) =>
  fc.constantFrom<(b: Body) => Breakage>(
    (b) => ({ body: { ...b, message: undefined }, param: 'message' }),
    (b) => ({ body: { ...b, message: '' }, param: 'message' }),
    (b) => ({ body: { ...b, message: seed % 2 ? 42 : ['hi'] }, param: 'message' }),
    (b) => ({ body: { ...b, message: '🌍'.repeat(MAX_MESSAGE_CHARS + 1 + (seed % 5)) }, param: 'message' }),
    (b) => ({ body: { ...b, context: seed % 2 ? 'ctx' : [] }, param: 'context' }),
    (b) => ({ body: { ...b, context: { user_id: seed } }, param: 'context.user_id' }),
    (b) => ({ body: { ...b, context: { user_id: 'u', session_id: null } }, param: 'context.session_id' }),
    (b) => ({ body: { ...b, tools: 'search' }, param: 'tools' }),
    (b) => {
      const tools = [...((b.tools as string[] | undefined) ?? [])];
      const at = tools.length;
      // A non-string, a tool outside the allow-list, or a duplicate ('x' is outside it too).
      return { body: { ...b, tools: [...tools, seed % 3 === 0 ? 7 : seed % 3 === 1 ? 'shell' : (tools[0] ?? 'x')] }, param: `tools[${at}]` };
    },
    (b) => ({ body: { ...b, temperature: [2.0001, -0.5, '1', null][seed % 4] }, param: 'temperature' }),
    (b) => ({ body: { ...b, max_tokens: [0, MAX_TOKENS + 1, 1.5, '5', -3][seed % 5] }, param: 'max_tokens' }),
    () => ({ body: [null, 1, 'text', [], true][seed % 5], param: 'body' }),
  ).map((breakIt) => {
    const broken = breakIt(body);
    // `undefined` fields vanish in JSON, as they would on the wire.
    return { body: broken.body === undefined ? undefined : JSON.parse(JSON.stringify(broken.body)), param: broken.param };
  }),
);

function verdict(body: unknown): { ok: true; userId: string | null; sessionId: string | null; tools: readonly string[] | null } | { ok: false; type: string; param: string | undefined } {
  try {
    const summary = validateChatRequest(body, agent, limits);
    return { ok: true, ...summary };
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    return { ok: false, type: error.type, param: error.param };
  }
}

describe('chat body validator (property)', () => {
  it('accepts every valid body and returns its context ids', () => {
    fc.assert(
      fc.property(validBody, (body) => {
        const context = body.context as { user_id?: string; session_id?: string } | undefined;
        expect(verdict(body)).toEqual({ ok: true, userId: context?.user_id ?? null, sessionId: context?.session_id ?? null, tools: (body.tools as string[] | undefined) ?? null });
      }),
      { numRuns: 1_000 },
    );
  });

  it('rejects a body with one broken rule as invalid_request naming that field', () => {
    fc.assert(
      fc.property(brokenBody, ({ body, param }) => {
        expect(verdict(body)).toEqual({ ok: false, type: 'invalid_request', param });
      }),
      { numRuns: 1_000 },
    );
  });

  it('parses any bytes to the value strict UTF-8 JSON gives, or answers invalid_json', () => {
    const strict = new TextDecoder('utf-8', { fatal: true });
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
      fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v))),
      // Valid JSON with one byte replaced: mostly broken JSON, sometimes broken UTF-8.
      fc.tuple(fc.jsonValue(), fc.nat(), fc.integer({ min: 0, max: 255 })).map(([v, at, byte]) => {
        const b = Buffer.from(JSON.stringify(v));
        if (b.length > 0) b[at % b.length] = byte;
        return b;
      }),
    );
    fc.assert(
      fc.property(bytes, (body) => {
        let expected: { value: unknown } | 'invalid_json';
        try {
          const text = strict.decode(body);
          expected = { value: JSON.parse(text) };
          // Valid JSON is still refused when it nests too deep or repeats a key (docs/security.md).
          const shape = referenceJsonShape(text);
          if (shape.depth > 64 || shape.duplicateKey) expected = 'invalid_json';
        } catch {
          expected = 'invalid_json';
        }
        if (body.length === 0) expected = 'invalid_json';
        try {
          expect({ value: parseJsonBody(body, { maxJsonDepth: 64 }) }).toEqual(expected);
        } catch (error) {
          if (!(error instanceof GatewayError)) throw error;
          expect(error.type).toBe('invalid_json');
          expect(expected).toBe('invalid_json');
        }
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('chat body through the gateway (property)', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    gateway = await startTestGateway({
      agents: { support: { upstream: upstream.baseUrl, tools: TOOLS, max_tokens: MAX_TOKENS } },
      config: { limits: { max_message_chars: MAX_MESSAGE_CHARS }, log: { level: 'warn' } },
    });
    ({ rawKey: key } = await gateway.createKey());
  });

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  it('forwards exactly the bodies the model accepts, byte for byte, and answers 400 naming the field otherwise', async () => {
    const body = fc.oneof(
      validBody.map((b) => ({ text: JSON.stringify(b), param: null as string | null })),
      brokenBody.map(({ body: b, param }) => ({ text: b === undefined ? '' : JSON.stringify(b), param: b === undefined ? 'invalid_json' : param })),
    );
    let counter = 0;
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom('chat', 'chat/stream'), async ({ text, param }, route) => {
        const requestId = `body-prop-${++counter}`;
        const response = await fetch(`${gateway.url}/agents/support/api/v1/${route}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId },
          body: text,
        });
        const answer = await response.text();
        const forwarded = upstream.requests.filter((r) => r.headers['x-request-id'] === requestId);
        if (param === null) {
          expect(response.status).toBe(200);
          expect(forwarded).toHaveLength(1);
          expect(forwarded[0]!.body.toString('utf8')).toBe(text);
        } else {
          expect(response.status).toBe(400);
          const error = (JSON.parse(answer) as { error: { type: string; param?: string } }).error;
          if (param === 'invalid_json') expect(error.type).toBe('invalid_json');
          else expect(error).toMatchObject({ type: 'invalid_request', param });
          expect(forwarded).toHaveLength(0);
        }
      }),
      { numRuns: 150 },
    );
  });
});
