// A `serve --workers N` worker's side of the IPC channel to the primary (cluster-messages.ts):
// it reports that it listens (with what the primary needs of its config), its settings after a
// reload, and a start it cannot complete; it answers the primary's request for its metrics;
// and the admin worker (worker 1) asks the primary for every worker's metrics and for the
// instance's state, which its /metrics and /readyz serve (decision 0112).
import {
  decodeInstanceStatus,
  decodeMetricsCollect,
  decodeMetricsGathered,
  encodeMetricsPart,
  encodeMetricsRequest,
  encodeStartFailed,
  encodeStatusRequest,
  encodeWorkerListening,
  encodeWorkerSettings,
  type InstanceStatus,
  type WorkerListening,
  type WorkerSettings,
} from './cluster-messages.js';
import { aggregateWorkerMetrics, labelWorkerMetrics, workerMetricsJson } from '../metrics/cluster-metrics.js';

/** How long the admin worker waits for the primary's answer; the primary itself waits less for the workers. */
const ANSWER_TIMEOUT_MS = 10_000;

/** Sends a message to the primary; resolves once it is handed to the channel (or at once without one). */
function send(message: object): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

/** The worker could not start: the primary prints `text` and exits 1. Resolves once sent (then exit). */
export function reportStartFailure(text: string): Promise<void> {
  return send(encodeStartFailed(text));
}

export function reportListening(listening: WorkerListening): void {
  void send(encodeWorkerListening(listening));
}

export function reportSettings(settings: WorkerSettings): void {
  void send(encodeWorkerSettings(settings));
}

/** Labels this worker's series and answers the primary's requests for them. */
export function answerMetricsRequests(workerIndex: number): void {
  labelWorkerMetrics(workerIndex);
  process.on('message', (message: unknown) => {
    const request = decodeMetricsCollect(message);
    if (!request) return;
    void workerMetricsJson().then(
      (metrics) => send(encodeMetricsPart(request.id, metrics)),
      // A collect callback that throws: this worker is left out of this scrape.
      () => send(encodeMetricsPart(request.id, [])),
    );
  });
}

/** The admin worker's questions to the primary, each paired with its answer by id. */
export interface InstanceView {
  /** /metrics: every listening worker's registry, aggregated. */
  metricsText(): Promise<{ contentType: string; body: string }>;
  status(): Promise<InstanceStatus>;
  /** Resolves once this is the last worker left (or the primary is gone): the admin listener closes last. */
  othersStopped(): Promise<void>;
}

/** How often a stopping admin worker asks whether the other workers have stopped. */
const LAST_OUT_POLL_MS = 100;

export function askPrimary(): InstanceView {
  let nextId = 0;
  const waiting = new Map<number, { decode: (message: unknown) => { id: number } | undefined; resolve: (answer: unknown) => void }>();
  process.on('message', (message: unknown) => {
    for (const [id, wait] of waiting) {
      const answer = wait.decode(message);
      if (answer?.id !== id) continue;
      waiting.delete(id);
      wait.resolve(answer);
      return;
    }
  });
  function ask<T extends { id: number }>(request: (id: number) => object, decode: (message: unknown) => T | undefined): Promise<T> {
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the primary did not answer'));
      }, ANSWER_TIMEOUT_MS);
      timer.unref();
      waiting.set(id, {
        decode,
        resolve: (answer) => {
          clearTimeout(timer);
          resolve(answer as T);
        },
      });
      void send(request(id));
    });
  }
  const status = async (): Promise<InstanceStatus> => {
    const { workers, listening, stopping } = await ask(encodeStatusRequest, decodeInstanceStatus);
    return { workers, listening, stopping };
  };
  return {
    status,
    othersStopped: async () => {
      // The primary kills whatever is left after every worker's grace, so this ends.
      while (process.connected) {
        const left = await status().then(
          (answer) => answer.listening,
          () => 0,
        );
        if (left <= 1) return;
        await new Promise((resolve) => setTimeout(resolve, LAST_OUT_POLL_MS));
      }
    },
    metricsText: async () => aggregateWorkerMetrics((await ask(encodeMetricsRequest, decodeMetricsGathered)).parts),
  };
}
