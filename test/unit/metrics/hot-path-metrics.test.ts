// The hot-path counters and histograms must be indistinguishable from prom-client's on
// /metrics and in the cluster aggregation: same text, same JSON, for any observations.
import fc from 'fast-check';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter, HotHistogram } from '../../../src/metrics/hot-path-metrics.js';

const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5];

function twins() {
  const ours = new Registry();
  const theirs = new Registry();
  const config = { name: 'agentgw_test_seconds', help: 'A test histogram.', labelNames: ['agent', 'route'] as const, buckets: BUCKETS };
  const counterConfig = { name: 'agentgw_test_total', help: 'A test counter.', labelNames: ['agent', 'status'] as const };
  return {
    ours,
    theirs,
    hotHistogram: new HotHistogram({ ...config, registers: [ours] }),
    histogram: new Histogram({ ...config, registers: [theirs] }),
    hotCounter: new HotCounter({ ...counterConfig, registers: [ours] }),
    counter: new Counter({ ...counterConfig, registers: [theirs] }),
  };
}

/** prom-client's JSON carries `exemplar: null|undefined` on histogram values; exemplars are off here. */
function withoutEmptyExemplars(metrics: Awaited<ReturnType<Registry['getMetricsAsJSON']>>) {
  return metrics.map((m) => ({
    ...m,
    values: m.values.map((value) => {
      const { exemplar, ...rest } = value as typeof value & { exemplar?: unknown };
      return exemplar == null ? rest : value;
    }),
  }));
}

const observation = fc.record({
  agent: fc.constantFrom('support', 'sales', 'a"b\\c'),
  route: fc.constantFrom('chat', 'chat/stream'),
  // Bucket bounds themselves included: a value equal to a bound belongs to that bucket.
  seconds: fc.oneof(fc.constantFrom(...BUCKETS, 0, 2, 1e-9), fc.double({ min: 0, max: 1, noNaN: true })),
  tokens: fc.nat({ max: 5000 }),
});

describe('hot-path metrics', () => {
  it('expose the same text and JSON as prom-client for the same observations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), fc.boolean(), async (observations, withDefaultLabels) => {
        const t = twins();
        if (withDefaultLabels) {
          t.ours.setDefaultLabels({ worker: '2' });
          t.theirs.setDefaultLabels({ worker: '2' });
        }
        for (const o of observations) {
          t.hotHistogram.labels({ agent: o.agent, route: o.route }).observe(o.seconds);
          t.histogram.labels({ agent: o.agent, route: o.route }).observe(o.seconds);
          t.hotCounter.labels(o.agent, '2xx').inc(o.tokens);
          t.counter.labels(o.agent, '2xx').inc(o.tokens);
        }
        expect(await t.ours.metrics()).toBe(await t.theirs.metrics());
        expect(withoutEmptyExemplars(await t.ours.getMetricsAsJSON())).toEqual(withoutEmptyExemplars(await t.theirs.getMetricsAsJSON()));
      }),
      { numRuns: 150 },
    );
  });

  it('merge across workers like prom-client metrics (AggregatorRegistry)', async () => {
    const workers = [twins(), twins()];
    workers.forEach((t, i) => {
      for (const registry of [t.ours, t.theirs]) registry.setDefaultLabels({ worker: String(i + 1) });
      for (let n = 0; n < 5 * (i + 1); n++) {
        t.hotHistogram.observe({ agent: 'support', route: 'chat' }, n / 1000);
        t.histogram.observe({ agent: 'support', route: 'chat' }, n / 1000);
      }
    });
    const merge = async (pick: (t: ReturnType<typeof twins>) => Registry) =>
      AggregatorRegistry.aggregate(await Promise.all(workers.map((t) => pick(t).getMetricsAsJSON()))).metrics();
    expect(await merge((t) => t.ours)).toBe(await merge((t) => t.theirs));
  });

  it('a bound series is the same series as the labelled calls', async () => {
    const { ours, hotCounter } = twins();
    const bound = hotCounter.labels({ agent: 'support', status: '2xx' });
    bound.inc();
    hotCounter.inc({ agent: 'support', status: '2xx' }, 2);
    hotCounter.labels('support', '2xx').inc(3);
    expect(await ours.metrics()).toContain('agentgw_test_total{agent="support",status="2xx"} 6');
  });

  it('refuse unknown labels, negative or non-finite counts and non-finite observations, changing nothing', async () => {
    const { ours, hotCounter, hotHistogram } = twins();
    expect(() => hotCounter.inc({ agent: 'a', key_id: 'k1' } as never)).toThrow(/label/i);
    expect(() => hotHistogram.labels('a', 'chat', 'extra')).toThrow(/label/i);
    const bound = hotCounter.labels('a', '2xx');
    expect(() => bound.inc(-1)).toThrow(/counter/);
    expect(() => bound.inc(Number.NaN)).toThrow(/counter/);
    expect(() => bound.inc(Infinity)).toThrow(/counter/);
    expect(() => hotHistogram.labels('a', 'chat').observe(Number.NaN)).toThrow(/finite/);
    const text = await ours.metrics();
    expect(text).toContain('agentgw_test_total{agent="a",status="2xx"} 0');
    expect(text).toContain('agentgw_test_seconds_count{agent="a",route="chat"} 0');
  });

  it('reset() empties every series, as registry.resetMetrics() expects', async () => {
    const { ours, hotCounter } = twins();
    hotCounter.labels('a', '2xx').inc();
    ours.resetMetrics();
    expect(await ours.metrics()).not.toContain('agent="a"');
  });
});
