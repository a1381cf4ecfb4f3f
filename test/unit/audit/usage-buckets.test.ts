// The rollups' bucket arithmetic: latency buckets and the percentile error the docs state.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toAuditLine, type AuditRecord } from '../../../src/audit/audit-record.js';
import { escapeSessionId, parseRollupRecord, sessionGroup, sessionOfGroupPart, usableRecord } from '../../../src/audit/rollup-record.js';
import { addPacked, costMicroUsd, countRecord, latencyBucket, latencyBucketValueMs, MAX_LATENCY_BUCKET, MAX_RECORD_COST_USD, mergePacked, packFields, summarize, type BucketFields } from '../../../src/audit/usage-buckets.js';
import { lcg } from '../../helpers/lcg.js';

describe('usage buckets', () => {
  it('puts latencies in log-spaced buckets, powers of two closing theirs', () => {
    expect([0, 0.4, 1].map(latencyBucket)).toEqual([0, 0, 0]);
    expect(latencyBucket(1.01)).toBe(1);
    expect(latencyBucket(2)).toBe(4);
    expect(latencyBucket(2.01)).toBe(5);
    expect(latencyBucket(1024)).toBe(40);
    expect(latencyBucket(1e12)).toBe(MAX_LATENCY_BUCKET);
    for (let i = 1; i < MAX_LATENCY_BUCKET; i++) {
      expect(latencyBucket(2 ** (i / 4) * 0.999)).toBe(i);
      expect(latencyBucket(2 ** (i / 4) * 1.001)).toBe(i + 1);
    }
  });

  it('reports p50 and p99 within 9.1 % of the exact percentile above 1 ms (plus 0.005 ms of rounding)', () => {
    const random = lcg(42);
    for (let round = 0; round < 50; round++) {
      const fields: BucketFields = new Map();
      const samples: number[] = [];
      const n = 1 + Math.floor(random() * 500);
      for (let i = 0; i < n; i++) {
        const latency = Math.round(Math.exp(random() * 9) * 100) / 100 + 1.01;
        samples.push(latency);
        countRecord(fields, { ts: '2026-01-01T00:00:00.000Z', key_id: 'k', account: 'a', agent: 'g', outcome: 'ok', tokens_used: 1, latency_ms: latency, cost_usd: null, session_id: null, tool_calls: 0 });
      }
      samples.sort((a, b) => a - b);
      const totals = summarize(fields);
      for (const [q, got] of [[0.5, totals.latency_ms.p50], [0.99, totals.latency_ms.p99]] as const) {
        const exact = samples[Math.ceil(q * n) - 1]!;
        // The bound of the docs, plus the rounding to 0.01 ms.
        expect(Math.abs(got! - exact)).toBeLessThanOrEqual((2 ** (1 / 8) - 1) * exact + 0.005);
      }
      expect(totals.requests).toBe(n);
    }
  });

  it('counts tokens, errors by outcome and requests; reports no percentile without requests', () => {
    const fields: BucketFields = new Map();
    const fiveMs = Math.round(latencyBucketValueMs(latencyBucket(5)) * 100) / 100;
    expect(Math.abs(fiveMs - 5) / 5).toBeLessThan(0.091);
    const base = { ts: '2026-01-01T00:00:00.000Z', key_id: 'k', account: 'a', agent: 'g', latency_ms: 5, cost_usd: null, session_id: null, tool_calls: 0 };
    countRecord(fields, { ...base, outcome: 'ok', tokens_used: 7 });
    countRecord(fields, { ...base, outcome: 'rate_limited', tokens_used: null });
    countRecord(fields, { ...base, outcome: 'rate_limited', tokens_used: 0 });
    countRecord(fields, { ...base, outcome: 'upstream_error', tokens_used: 3 });
    expect(summarize(fields)).toEqual({ requests: 4, tokens: 10, cost_usd: 0, tool_calls: 0, errors: { rate_limited: 2, upstream_error: 1 }, latency_ms: { p50: fiveMs, p99: fiveMs } });
    expect(summarize(new Map()).latency_ms).toEqual({ p50: null, p99: null });
  });

  it('never counts a token figure no answer can have (1e308 twice stays out; the bucket stays finite)', () => {
    const fields: BucketFields = new Map();
    const base = { ts: '2026-01-01T00:00:00.000Z', key_id: 'k', account: 'a', agent: 'g', latency_ms: 5, outcome: 'ok', cost_usd: null, session_id: null, tool_calls: 0 };
    countRecord(fields, { ...base, tokens_used: 1e308 });
    countRecord(fields, { ...base, tokens_used: 1e308 });
    countRecord(fields, { ...base, tokens_used: 12 });
    expect(summarize(fields).tokens).toBe(12);
  });

  it('sums cost in whole micro-dollars, exactly, and leaves out a cost no answer can have', () => {
    const fields: BucketFields = new Map();
    const base = { ts: '2026-01-01T00:00:00.000Z', key_id: 'k', account: 'a', agent: 'g', latency_ms: 5, outcome: 'ok', tokens_used: 1, session_id: null, tool_calls: 0 };
    // 0.1 + 0.2 in doubles is 0.30000000000000004; in micro-dollars it is 300000.
    countRecord(fields, { ...base, cost_usd: 0.1 });
    countRecord(fields, { ...base, cost_usd: 0.2 });
    // Half a micro-dollar rounds up; under it, down.
    countRecord(fields, { ...base, cost_usd: 0.0000005 });
    countRecord(fields, { ...base, cost_usd: 0.0000004 });
    for (const odd of [null, -1, Number.NaN, Number.POSITIVE_INFINITY, MAX_RECORD_COST_USD * 2]) countRecord(fields, { ...base, cost_usd: odd });
    expect(fields.get('cost_micro')).toBe(300_001);
    expect(summarize(fields).cost_usd).toBe(0.300001);
    expect(costMicroUsd(0.018)).toBe(18_000);
    expect(costMicroUsd('0.5')).toBeNull();
  });
});

describe('reading an audit line for the rollup', () => {
  const base: AuditRecord = {
    id: 'id-1', request_id: 'client-1', ts: '2026-01-31T13:05:00.123Z', key_id: 'key_0000000000000001', account: 'acme:eu', plan: 'pro', agent: 'support', route: 'chat',
    status: 200, outcome: 'ok', tokens_used: 12, latency_ms: 35.25, upstream_latency_ms: 30, bytes_in: 10, bytes_out: 20, client_ip: '127.0.0.1', user_id: null, session_id: null, model: null, cost_usd: null, tool_calls: null, tools_withheld: null,
  };
  const expected = (r: AuditRecord) => ({ ts: r.ts, key_id: r.key_id, account: r.account, agent: r.agent, outcome: r.outcome, tokens_used: r.tokens_used, latency_ms: r.latency_ms, cost_usd: r.cost_usd, session_id: r.session_id, tool_calls: r.tool_calls?.length ?? 0 });

  it('reads the fields of any record as JSON.parse does, whatever the free-form fields hold', () => {
    fc.assert(
      fc.property(
        fc.record({
          id: fc.string(),
          user_id: fc.option(fc.string()),
          session_id: fc.option(fc.string()),
          tokens_used: fc.option(fc.integer({ min: 0, max: 1e9 })),
          latency_ms: fc.double({ min: 0, max: 1e7, noNaN: true }),
          outcome: fc.constantFrom('ok', 'invalid_request', 'rate_limited', 'upstream_error', 'client_closed', 'timeout', 'error'),
          client_ip: fc.string(),
          model: fc.option(fc.string()),
          cost_usd: fc.option(fc.double({ min: 0, max: 1e6, noNaN: true })),
          tool_calls: fc.option(fc.array(fc.string(), { maxLength: 3 })),
        }),
        (fields) => {
          const record = { ...base, ...fields } as AuditRecord;
          expect(parseRollupRecord(toAuditLine(record))).toEqual(expected(record));
        },
      ),
      { numRuns: 300 },
    );
    // A value the fast reader cannot take as it stands goes through JSON.parse.
    const odd = { ...base, account: 'a"b\\c' };
    expect(parseRollupRecord(toAuditLine(odd))).toEqual(expected(odd));
    expect(parseRollupRecord(JSON.stringify({ ...base, ts: undefined, key_id: 'k', account: 'a', agent: 'g' }))).toBeUndefined();
    expect(parseRollupRecord('{"id":"x","ts":"2026-01-31T13:00:00Z","action":"key.create","key_id":"key_x"}')).toBeUndefined();
    expect(parseRollupRecord('not json')).toBeUndefined();
    // A model or tool name that spells the cost marker (escaped in the line) is not read as the cost.
    const forged = { ...base, model: '"cost_usd":99,', tool_calls: ['","cost_usd":7'], cost_usd: 0.5 };
    expect(parseRollupRecord(toAuditLine(forged))).toEqual(expected(forged));
    // A record written before costs were recorded.
    const older = toAuditLine(base).replace(/,"model":.*$/, '}');
    expect(parseRollupRecord(older)).toEqual(expected(base));
    // Tool names holding a quote or a bracket are counted as JSON.parse counts them.
    const brackets = { ...base, tool_calls: ['a]b', 'c"d]', ']'], session_id: 'run "7"' };
    expect(parseRollupRecord(toAuditLine(brackets))).toEqual(expected(brackets));
  });
});

describe('packed buckets', () => {
  it('pack and add up: a field twice (an appended bucket) counts as its sum, and merging is adding', () => {
    const fields: BucketFields = new Map([['requests', 3], ['tokens', 300], ['e:rate_limited', 1], ['l:30', 2]]);
    expect(packFields(fields)).toBe('requests=3 tokens=300 e:rate_limited=1 l:30=2');
    const into: BucketFields = new Map();
    addPacked(into, 'requests=3 tokens=300 l:30=2;requests=2 l:31=1;l:30=1');
    expect(Object.fromEntries(into)).toEqual({ requests: 5, tokens: 300, 'l:30': 3, 'l:31': 1 });
    addPacked(into, null);
    addPacked(into, '');
    expect(into.get('requests')).toBe(5);
    const merged: BucketFields = new Map();
    addPacked(merged, mergePacked('requests=1 l:2=1', 'requests=2 e:timeout=1'));
    expect(Object.fromEntries(merged)).toEqual({ requests: 3, 'l:2': 1, 'e:timeout': 1 });
  });

  it('rolls up only records whose group names can be stored (no whitespace, control character or leading #)', () => {
    const base = { ts: '2026-01-31T13:05:00.000Z', key_id: 'key_0000000000000001', account: 'acme:eu', agent: 'support', outcome: 'ok', tokens_used: 1, latency_ms: 1, cost_usd: null, session_id: 'any run id at all', tool_calls: 0 };
    expect(usableRecord(base)).toBe(true);
    for (const odd of [{ account: 'acme eu' }, { agent: 'a\tb' }, { key_id: '' }, { account: '#acme' }, { agent: 'x\u0001' }, { ts: 'yesterday' }]) {
      expect(usableRecord({ ...base, ...odd }), JSON.stringify(odd)).toBe(false);
    }
  });
});

describe('session groups', () => {
  it('escape exactly what the Redis script escapes, and read back any session id', () => {
    expect(sessionGroup('key_1', 'acme', 'support', 'run 1\t%x')).toBe('key_1 acme support run%201%09%25x');
    expect(escapeSessionId('rün-ü#[]')).toBe('rün-ü#[]');
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ maxLength: 40 }), (a, b) => {
        for (const id of [a, b]) {
          const part = escapeSessionId(id);
          // ASCII whitespace and control characters, as Lua's %s and %c know them (other spaces may stay).
          expect(part).not.toMatch(/[ \x00-\x1f\x7f]/);
          expect(sessionOfGroupPart(part)).toBe(id);
        }
      }),
      { numRuns: 500 },
    );
  });
});
