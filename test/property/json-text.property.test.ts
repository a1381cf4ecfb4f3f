// The hand-written JSON text is JSON.stringify's, byte for byte: for any string (lone
// surrogates, control characters, quotes and backslashes included), any number, and any
// audit record.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toAuditLine, type AuditRecord } from '../../src/audit/audit-record.js';
import { isPlainJsonText, jsonHundredthsLiteral, jsonNumberLiteral, jsonStringLiteral, PlainTextMemo } from '../../src/json-text.js';

const anyString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udfff', 'é', 'a') }),
);
const anyNumber = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(-0, Number.NaN, Number.POSITIVE_INFINITY, 1e21, 5e-324));

const anyRecord: fc.Arbitrary<AuditRecord> = fc.record({
  id: anyString,
  request_id: anyString,
  ts: anyString,
  key_id: anyString,
  account: anyString,
  plan: anyString,
  agent: anyString,
  route: fc.constantFrom('chat' as const, 'chat/stream' as const),
  status: anyNumber,
  outcome: fc.constantFrom('ok' as const, 'invalid_request' as const, 'rate_limited' as const, 'upstream_error' as const, 'client_closed' as const, 'timeout' as const, 'error' as const),
  tokens_used: fc.option(anyNumber, { nil: null }),
  latency_ms: anyNumber,
  upstream_latency_ms: fc.option(anyNumber, { nil: null }),
  bytes_in: anyNumber,
  bytes_out: anyNumber,
  client_ip: anyString,
  user_id: fc.option(anyString, { nil: null }),
  session_id: fc.option(anyString, { nil: null }),
  model: fc.option(anyString, { nil: null }),
  cost_usd: fc.option(anyNumber, { nil: null }),
  tool_calls: fc.option(fc.array(anyString, { maxLength: 3 }), { nil: null }),
  tools_withheld: fc.option(fc.array(anyString, { maxLength: 3 }), { nil: null }),
});

// Strings a gateway's own records hold (ids, names, addresses), with the units either side
// of what needs escaping: the writers' quotes-in-the-constant-pieces path.
const plainString = fc.string({ unit: fc.constantFrom('a', 'Z', '0', '-', ':', '.', ' ', '~', '\u007f', 'é', '日', '\u2028', '\ue000', '\uffff') });
const plainRecord: fc.Arbitrary<AuditRecord> = anyRecord.chain((record) =>
  fc
    .record({ id: plainString, request_id: plainString, ts: plainString, key_id: plainString, account: plainString, plan: plainString, agent: plainString, client_ip: plainString })
    .map((plain) => Object.assign({}, record, plain)),
);

describe('JSON text written by hand', () => {
  it('isPlainJsonText: only strings whose JSON text is the string between quotes', () => {
    fc.assert(
      fc.property(fc.oneof(anyString, plainString), (text) => {
        if (isPlainJsonText(text)) expect(JSON.stringify(text)).toBe(`"${text}"`);
        else expect(/[\u0000-\u001f"\\\ud800-\udfff]/.test(text)).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('toAuditLine is JSON.stringify for records of plain strings (quotes in the constant pieces)', () => {
    fc.assert(
      fc.property(plainRecord, (record) => {
        expect(toAuditLine(record)).toBe(JSON.stringify(record));
      }),
      { numRuns: 1_000 },
    );
  });

  it('PlainTextMemo answers as isPlainJsonText for any sequence of strings, repeated or not', () => {
    // A small pool makes the same text come back (equal, and the very same string) between others.
    const pool = fc.array(fc.oneof(anyString, plainString), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(
        pool.chain((texts) => fc.array(fc.constantFrom(...texts), { maxLength: 30 })),
        (sequence) => {
          const memo = new PlainTextMemo();
          for (const text of sequence) expect(memo.isPlain(text)).toBe(isPlainJsonText(text));
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('toAuditLine is JSON.stringify for a run of records whose fields repeat (the memos of repeated fields)', () => {
    // Records from a pool: one field plain in a record and not in the next must take the escaping path.
    const records = fc.array(fc.oneof(plainRecord, anyRecord), { minLength: 1, maxLength: 3 }).chain((pool) => fc.array(fc.constantFrom(...pool), { maxLength: 20 }));
    fc.assert(
      fc.property(records, (run) => {
        for (const record of run) expect(toAuditLine(record)).toBe(JSON.stringify(record));
      }),
      { numRuns: 500 },
    );
  });

  it('jsonStringLiteral is JSON.stringify for any string', () => {
    fc.assert(fc.property(anyString, (text) => {
      expect(jsonStringLiteral(text)).toBe(JSON.stringify(text));
    }), { numRuns: 2_000 });
  });

  it('jsonNumberLiteral is JSON.stringify for any number', () => {
    fc.assert(fc.property(anyNumber, (value) => {
      expect(jsonNumberLiteral(value)).toBe(JSON.stringify(value));
    }), { numRuns: 2_000 });
  });

  it('jsonHundredthsLiteral is JSON.stringify for durations rounded to hundredths, and for any other number', () => {
    const rounded = fc.double({ min: 0, max: 2e7, noNaN: true }).map((ms) => Math.round(ms * 100) / 100);
    const hundredths = fc.integer({ min: 0, max: 1e9 + 10 }).map((h) => h / 100);
    fc.assert(
      fc.property(fc.oneof(rounded, hundredths, anyNumber), (value) => {
        expect(jsonHundredthsLiteral(value)).toBe(JSON.stringify(value));
      }),
      { numRuns: 20_000 },
    );
    for (const value of [0, -0, 0.01, 0.1, 0.5, 1, 1.05, 1.1, 9.99, 10, 123.45, 99999.99, 1e7 - 0.01, 9999999.99, 1e-7, 0.001]) {
      expect(jsonHundredthsLiteral(value)).toBe(JSON.stringify(value));
    }
  });

  it('toAuditLine is JSON.stringify for any record built in the contract order, and parses back to it', () => {
    fc.assert(
      fc.property(anyRecord, (record) => {
        const line = toAuditLine(record);
        expect(line).toBe(JSON.stringify(record));
        expect(line).not.toContain('\n');
      }),
      { numRuns: 1_000 },
    );
  });

  it('toAuditLine writes the contract fields only, in the contract order, whatever order the object was built in', () => {
    const record: AuditRecord = {
      tools_withheld: null,
      tool_calls: ['a'],
      cost_usd: 0.5,
      model: 'm',
      session_id: null,
      user_id: 'u',
      client_ip: '10.0.0.1',
      bytes_out: 2,
      bytes_in: 1,
      upstream_latency_ms: null,
      latency_ms: 3,
      tokens_used: null,
      outcome: 'ok',
      status: 200,
      route: 'chat',
      agent: 'support',
      plan: 'starter',
      account: 'acct',
      key_id: 'key_1',
      ts: '2026-11-21T19:31:22.000Z',
      request_id: 'client-1',
      id: 'req-1',
    };
    const line = toAuditLine(Object.assign({ extra: 'not in the contract' }, record));
    expect(Object.keys(JSON.parse(line) as object)).toEqual(['id', 'request_id', 'ts', 'key_id', 'account', 'plan', 'agent', 'route', 'status', 'outcome', 'tokens_used', 'latency_ms', 'upstream_latency_ms', 'bytes_in', 'bytes_out', 'client_ip', 'user_id', 'session_id', 'model', 'cost_usd', 'tool_calls', 'tools_withheld']);
    expect(JSON.parse(line)).toEqual(record);
  });
});
