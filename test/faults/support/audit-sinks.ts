// Reading what reached the audit sinks after a fault, and which answered requests have no
// record there: the "audit records lost" column of docs/reliability.md.
import { readFile } from 'node:fs/promises';
import type { AuditRecord } from '../../../src/audit/audit-record.js';
import type { RedisClient } from '../../../src/redis/redis-client.js';
import type { Outcome } from './traffic.js';

export async function readAuditFile(path: string): Promise<AuditRecord[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditRecord);
}

export async function readAuditStream(redis: RedisClient, streamKey: string): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  let start = '-';
  for (;;) {
    const entries = await redis.xrange(streamKey, start, '+', 'COUNT', 5_000);
    for (const [, fields] of entries) records.push(JSON.parse(fields[1]!) as AuditRecord);
    if (entries.length < 5_000) return records;
    start = `(${entries.at(-1)![0]}`;
  }
}

/** Every request the client got an answer for went past authentication here (valid key, known route). */
export function answered(outcomes: readonly Outcome[]): Outcome[] {
  return outcomes.filter((o) => o.status > 0);
}

export interface AuditCheck {
  /** Answered requests with no record. */
  missing: string[];
  /** Request ids with more than one record (the file sink writes each record once). */
  duplicated: string[];
  /** Records whose id the test never sent. */
  strangers: string[];
}

export function checkAudit(records: readonly AuditRecord[], outcomes: readonly Outcome[], idPrefixes: readonly string[]): AuditCheck {
  const counts = new Map<string, number>();
  for (const record of records) counts.set(record.id, (counts.get(record.id) ?? 0) + 1);
  return {
    missing: answered(outcomes)
      .map((o) => o.id)
      .filter((id) => !counts.has(id)),
    duplicated: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    strangers: [...counts.keys()].filter((id) => !idPrefixes.some((prefix) => id.startsWith(prefix))),
  };
}
