// The day partitions' names and days, and which days a record may be written to
// (src/audit/postgres-audit-partitions.ts, decision 0087). The SQL they run is tested against
// the machine's PostgreSQL in test/integration/audit-postgres-partitions.test.ts.
import { describe, expect, it } from 'vitest';
import { AuditPartitions, dayOf, partitionDay, partitionName, PARTITION_DAYS_AHEAD } from '../../../src/audit/postgres-audit-partitions.js';
import { silentLogger } from '../../../src/logger.js';

const DAY_MS = 86_400_000;
const partitions = (retentionMs?: number) => new AuditPartitions({ table: '"t"', schemaPrefix: '', bareTable: 't', lockKey: 'k', retentionMs, logger: silentLogger, where: {} });

describe('day partitions', () => {
  it('names a UTC day and reads it back; a name the gateway did not give is not its partition', () => {
    const day = dayOf(Date.parse('2026-12-07T23:59:59.999Z'));
    expect(partitionName('agentgw_audit', day)).toBe('agentgw_audit_p20261207');
    expect(partitionDay('agentgw_audit', 'agentgw_audit_p20261207')).toBe(day);
    expect(dayOf(Date.parse('2026-12-08T00:00:00.000Z'))).toBe(day + 1);
    for (const name of ['agentgw_audit_p20261307', 'agentgw_audit_p2026120', 'agentgw_audit_p20261207x', 'other_p20261207', 'agentgw_audit_archive']) expect(partitionDay('agentgw_audit', name), name).toBeUndefined();
  });

  it('writes from the retention horizon\'s day (or any day without one) to two days ahead', () => {
    const now = Date.parse('2026-12-07T02:00:00.000Z');
    const today = dayOf(now);
    expect(partitions().writableDays(now)).toEqual({ first: Number.NEGATIVE_INFINITY, last: today + PARTITION_DAYS_AHEAD });
    // 90 days before 02:00 on 7 Dec is 02:00 on 8 Sep: that day is kept (its end is after the horizon), the 7th is not.
    expect(partitions(90 * DAY_MS).writableDays(now).first).toBe(dayOf(Date.parse('2026-09-08T12:00:00Z')));
  });
});
