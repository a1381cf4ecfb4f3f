// The rollups' bucket arithmetic: latency buckets and the percentile error the docs state.
import { describe, expect, it } from 'vitest';
import { countRecord, latencyBucket, latencyBucketValueMs, MAX_LATENCY_BUCKET, summarize, type BucketFields } from '../../../src/audit/usage-buckets.js';
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
        countRecord(fields, { ts: '2026-01-01T00:00:00.000Z', key_id: 'k', account: 'a', agent: 'g', outcome: 'ok', tokens_used: 1, latency_ms: latency });
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
    const base = { ts: '2026-01-01T00:00:00.000Z', key_id: 'k', account: 'a', agent: 'g', latency_ms: 5 };
    countRecord(fields, { ...base, outcome: 'ok', tokens_used: 7 });
    countRecord(fields, { ...base, outcome: 'rate_limited', tokens_used: null });
    countRecord(fields, { ...base, outcome: 'rate_limited', tokens_used: 0 });
    countRecord(fields, { ...base, outcome: 'upstream_error', tokens_used: 3 });
    expect(summarize(fields)).toEqual({ requests: 4, tokens: 10, errors: { rate_limited: 2, upstream_error: 1 }, latency_ms: { p50: fiveMs, p99: fiveMs } });
    expect(summarize(new Map()).latency_ms).toEqual({ p50: null, p99: null });
  });
});
