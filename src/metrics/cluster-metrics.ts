// `serve --workers N`: every worker keeps its own registry; the primary, which owns the admin
// listener, asks each one over the cluster IPC channel (prom-client's AggregatorRegistry) and
// serves the union on /metrics.
//
// Every series of a worker carries `worker="<index>"` (1..N, reused when a worker is
// replaced, so bounded). Summing the workers inside the process instead would make a
// counter fall whenever one worker restarts, which Prometheus reads as a reset of the
// whole sum; per-worker series reset on their own and `sum(rate(...))` stays right.
import { AggregatorRegistry } from 'prom-client';
import { registry } from './metrics.js';

export const WORKER_LABEL = 'worker';

/** In a cluster worker: label this worker's series and answer the primary's requests. */
export function exposeWorkerMetrics(workerIndex: number): void {
  registry.setDefaultLabels({ [WORKER_LABEL]: String(workerIndex) });
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs the worker's IPC listener (once per process).
  new AggregatorRegistry();
}

/** In the primary: a /metrics source that gathers every connected worker's registry. */
export function clusterMetricsSource(): () => Promise<{ contentType: string; body: string }> {
  const aggregator = new AggregatorRegistry();
  return async () => ({ contentType: aggregator.contentType, body: await aggregator.clusterMetrics() });
}
