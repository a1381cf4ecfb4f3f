// `serve --workers N` helpers shared by the primary and its workers (node:cluster).
import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import type { GatewayConfig } from '../config/schema.js';

/** Set by the primary on each worker it forks: 1..N, reused when a worker is replaced. */
export const WORKER_INDEX_ENV = 'AGENTGW_WORKER_INDEX';

/** `--workers`: a positive integer or `auto` (one per core); undefined when invalid. */
export function parseWorkerCount(text: string, cores: number = availableParallelism()): number | undefined {
  if (text.trim().toLowerCase() === 'auto') return Math.max(1, cores);
  if (!/^\d+$/.test(text.trim())) return undefined;
  const count = Number(text);
  return count >= 1 && count <= 1024 ? count : undefined;
}

/** This process's worker index when it is a cluster worker forked by `serve`. */
export function currentWorkerIndex(env: NodeJS.ProcessEnv = process.env): number | undefined {
  if (!cluster.isWorker) return undefined;
  const index = Number(env[WORKER_INDEX_ENV]);
  return Number.isInteger(index) && index >= 1 ? index : undefined;
}

/** "var/audit-spool.jsonl" → "var/audit-spool.worker-2.jsonl". */
export function perWorkerPath(path: string, workerIndex: number): string {
  const ext = extname(path);
  return ext ? `${path.slice(0, -ext.length)}.worker-${workerIndex}${ext}` : `${path}.worker-${workerIndex}`;
}

/**
 * A worker's view of the config: its own audit spool and journal, because each is replayed
 * and truncated by the one process that owns it. The audit file sink is shared (appends).
 */
export function withWorkerPaths(config: GatewayConfig, workerIndex: number | undefined): GatewayConfig {
  if (workerIndex === undefined) return config;
  const { spool, journal } = config.audit;
  return { ...config, audit: { ...config.audit, spool: perWorkerPath(spool, workerIndex), journal: typeof journal === 'string' ? perWorkerPath(journal, workerIndex) : journal } };
}
