// `serve --workers N`: the primary's answers to the admin worker (worker 1, which serves the
// admin listener, decision 0112). /metrics: the primary asks every listening worker for its
// registry and hands the admin worker what came back, which aggregates it; the primary never
// parses a metric. /readyz: how many workers listen, and whether the instance is stopping.
import cluster, { type Worker } from 'node:cluster';
import { decodeMetricsPart, decodeMetricsRequest, decodeStatusRequest, encodeInstanceStatus, encodeMetricsCollect, encodeMetricsGathered } from './cluster-messages.js';
import type { WorkerSupervisor } from './cluster-supervisor.js';

/**
 * A worker that does not answer within this is left out of that scrape (its series are absent,
 * which the `worker` label shows) rather than holding /metrics; less than the admin worker's
 * own wait for the primary (cluster-ipc-worker.ts), so the scrape gets what did come.
 */
const GATHER_TIMEOUT_MS = 5_000;

interface Gathering {
  parts: unknown[][];
  waitingFor: Set<Worker>;
  finish(): void;
}

export function relayAdminRequests(supervisor: WorkerSupervisor, isStopping: () => boolean): void {
  let nextCollectId = 0;
  const gatherings = new Map<number, Gathering>();

  function gather(requester: Worker, requestId: number): void {
    const collectId = nextCollectId++;
    const workers = supervisor.listeningWorkers().filter((worker) => worker.isConnected());
    const timer = setTimeout(() => gathering.finish(), GATHER_TIMEOUT_MS);
    const gathering: Gathering = {
      parts: [],
      waitingFor: new Set(workers),
      finish: () => {
        clearTimeout(timer);
        gatherings.delete(collectId);
        if (requester.isConnected()) requester.send(encodeMetricsGathered(requestId, gathering.parts));
      },
    };
    gatherings.set(collectId, gathering);
    if (workers.length === 0) return gathering.finish();
    for (const worker of workers) worker.send(encodeMetricsCollect(collectId));
  }

  cluster.on('message', (worker, message: unknown) => {
    const part = decodeMetricsPart(message);
    if (part) {
      const gathering = gatherings.get(part.id);
      // Late (after the timeout), or an answer this worker already gave: dropped.
      if (!gathering?.waitingFor.delete(worker)) return;
      gathering.parts.push(part.metrics);
      if (gathering.waitingFor.size === 0) gathering.finish();
      return;
    }
    const metricsRequest = decodeMetricsRequest(message);
    if (metricsRequest) return gather(worker, metricsRequest.id);
    const statusRequest = decodeStatusRequest(message);
    if (statusRequest && worker.isConnected()) {
      worker.send(encodeInstanceStatus(statusRequest.id, { workers: supervisor.count, listening: supervisor.listeningCount, stopping: isStopping() }));
    }
  });
}
