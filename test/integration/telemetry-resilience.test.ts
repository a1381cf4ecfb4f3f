// A collector that is down, hanging or answering 500 never slows or fails a request
// (docs/observability.md "When the collector is down"): four gateways in one process, the
// same runner, each exporting to a collector in another state, with their requests
// interleaved so machine load falls on all alike. Compared with each other (medians and a
// generous factor), never against an absolute bound. Spans that cannot be delivered are
// counted in agentgw_telemetry_dropped_total.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusingPort } from '../helpers/free-port.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js';
import { waitFor } from '../helpers/wait.js';
import { metrics } from '../../src/metrics/metrics.js';

const ROUNDS = 60;
/** How much slower a request may be with a failing collector than with a working one: far above noise, far below any real wait. */
const FACTOR = 3;

async function droppedCount(reason: string): Promise<number> {
  return (await metrics.telemetryDropped.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

// Waits below allow for a loaded machine; the test's own deadline is longer than any of them.
describe('a collector that is down, hanging or failing', { timeout: 180_000 }, () => {
  let runner: FakeUpstream;
  const receivers: Record<'up' | 'hanging' | 'failing', OtlpReceiver> = {} as never;
  const gateways: Record<'up' | 'hanging' | 'failing' | 'down', { gateway: TestGateway; key: string }> = {} as never;

  beforeAll(async () => {
    runner = await startFakeUpstream();
    receivers.up = await startOtlpReceiver('ok');
    receivers.hanging = await startOtlpReceiver('hang');
    receivers.failing = await startOtlpReceiver('fail');
    const endpoints = { up: receivers.up.url, hanging: receivers.hanging.url, failing: receivers.failing.url, down: `http://127.0.0.1:${await refusingPort()}` };
    for (const [name, endpoint] of Object.entries(endpoints) as [keyof typeof gateways, string][]) {
      // A small queue, so the hanging collector fills it within the test.
      const gateway = await startTestGateway({ agents: { support: runner.baseUrl }, config: { telemetry: { otlp_endpoint: endpoint, max_queue: 16 } } });
      gateways[name] = { gateway, key: (await gateway.createKey()).rawKey };
    }
  });

  afterAll(async () => {
    for (const { gateway } of Object.values(gateways)) await gateway.close();
    for (const receiver of Object.values(receivers)) await receiver.close();
    await runner.close();
  });

  it('answers every request as fast as with a working collector, and counts the spans it drops', async () => {
    const queueFullBefore = await droppedCount('queue_full');
    const exportFailedBefore = await droppedCount('export_failed');
    const latencies: Record<string, number[]> = { up: [], hanging: [], failing: [], down: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, { gateway, key }] of Object.entries(gateways)) {
        const started = performance.now();
        const res = await postChat(gateway.url, '/agents/support/api/v1/chat', key, { message: 'hi' });
        expect(res.status).toBe(200);
        await res.text();
        latencies[name]!.push(performance.now() - started);
      }
    }
    const up = median(latencies.up!);
    for (const name of ['hanging', 'failing', 'down']) {
      expect({ collector: name, median: median(latencies[name]!) }).toSatisfy(({ median: value }: { median: number }) => value <= up * FACTOR, `median ms with a working collector: ${up.toFixed(2)}`);
    }
    // The working collector got spans; the hanging one was sent some and never answered.
    expect(receivers.up.spans.length).toBeGreaterThan(0);
    expect(receivers.hanging.requests).toBeGreaterThan(0);
    // 60 requests (two spans each) into a queue of 16 that a hanging export holds: spans dropped.
    expect(await droppedCount('queue_full')).toBeGreaterThan(queueFullBefore);
    // The failing and the unreachable collector: the batches they did not take are counted.
    await waitFor('failed exports counted', async () => (await droppedCount('export_failed')) > exportFailedBefore, 30_000);
  });
});
