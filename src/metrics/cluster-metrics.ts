// `serve --workers N`: every worker keeps its own registry; the admin worker (worker 1, which
// serves the admin listener) gathers every worker's registry as JSON over IPC relayed by the
// primary (cli/cluster-ipc-worker.ts) and serves the union on /metrics, aggregated here with
// prom-client's AggregatorRegistry. The primary itself loads no prom-client (decision 0112).
//
// Every series of a worker carries `worker="<index>"` (1..N, reused when a worker is
// replaced, so bounded). Summing the workers inside the process instead would make a
// counter fall whenever one worker restarts, which Prometheus reads as a reset of the
// whole sum; per-worker series reset on their own and `sum(rate(...))` stays right.
import { AggregatorRegistry } from 'prom-client';
import { registry } from './metrics.js';

export const WORKER_LABEL = 'worker';

/** In a cluster worker: label every series of this process with its worker index. */
export function labelWorkerMetrics(workerIndex: number): void {
  registry.setDefaultLabels({ [WORKER_LABEL]: String(workerIndex) });
}

/** This process's registry as prom-client's JSON, which AggregatorRegistry.aggregate reads. */
export function workerMetricsJson(): Promise<unknown[]> {
  return registry.getMetricsAsJSON();
}

/** The Prometheus text of every worker's registry (each series keeps its `worker` label). */
export async function aggregateWorkerMetrics(parts: readonly unknown[][]): Promise<{ contentType: string; body: string }> {
  const aggregated = AggregatorRegistry.aggregate(parts as object[]);
  return { contentType: aggregated.contentType, body: await aggregated.metrics() };
}
