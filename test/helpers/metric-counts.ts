// Counter values read in process from the gateway's one metrics module, for before/after deltas.
import { metrics } from '../../src/metrics/metrics.js';

/** agentgw_redis_errors_total for one `op` (ratelimit, audit, authfail, ...); 0 before the first. */
export async function redisErrorCount(op: string): Promise<number> {
  return (await metrics.redisErrors.get()).values.find((v) => v.labels.op === op)?.value ?? 0;
}

/** agentgw_audit_records_total for one sink and result; 0 before the first. */
export async function auditCount(sink: string, result: string): Promise<number> {
  const { values } = await metrics.auditRecords.get();
  return values.find((v) => v.labels.sink === sink && v.labels.result === result)?.value ?? 0;
}
