// Rows for the table in docs/reliability.md: with FAULT_REPORT=path set, every fault test
// appends what it saw (one JSON object per line) so the table is filled from a real run.
import { appendFileSync } from 'node:fs';

export interface FaultRow {
  fault: string;
  answered: string;
  affected: string;
  auditLost: number | string;
  memory: string;
}

export function reportRow(row: FaultRow): void {
  const path = process.env.FAULT_REPORT;
  if (path) appendFileSync(path, `${JSON.stringify(row)}\n`);
}
