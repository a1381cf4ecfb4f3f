// Audit records for tests: made to order, and read back from where the sinks put them (a
// JSON Lines file, a spool, a Redis stream).
import { readFile } from 'node:fs/promises';
import { toAuditLine, type AuditLine, type AuditRecord } from '../../src/audit/audit-record.js';
import type { RedisClient } from '../../src/redis/redis-client.js';

export function makeRecord(n: number, overrides: Partial<AuditRecord> = {}): AuditRecord {
  return {
    id: `req-${String(n).padStart(6, '0')}`,
    request_id: `client-${n}`,
    ts: new Date(1_700_000_000_000 + n).toISOString(),
    key_id: n % 2 === 0 ? 'key_even' : 'key_odd',
    account: 'acct_1',
    plan: 'starter',
    agent: 'support',
    route: 'chat',
    status: 200,
    outcome: 'ok',
    tokens_used: 42,
    latency_ms: 12,
    upstream_latency_ms: 10,
    bytes_in: 100,
    bytes_out: 200,
    client_ip: '127.0.0.1',
    user_id: null,
    session_id: 'sess "quoted"\nwith newline',
    model: 'm-1',
    cost_usd: 0.000084,
    tool_calls: ['calculator', 'say "hi"'],
    tools_withheld: null,
    ...overrides,
  };
}

export function makeRecords(from: number, count: number): AuditRecord[] {
  return Array.from({ length: count }, (_, i) => makeRecord(from + i));
}

/** Records as the JSON lines sinks and spools take. */
export function makeLines(from: number, count: number): AuditLine[] {
  return makeRecords(from, count).map(toAuditLine);
}

/**
 * Which id a test matches records by: `id` (unique, made by the gateway) or `request_id` (the
 * exchange's X-Request-Id, which a test that sent its own ids knows in advance).
 */
export type AuditIdField = 'id' | 'request_id';

export function idOfLine(line: AuditLine): string {
  return (JSON.parse(line) as AuditRecord).id;
}

export function requestIdOfLine(line: AuditLine): string {
  return (JSON.parse(line) as AuditRecord).request_id;
}

/** The records of a JSON Lines file (a missing file: none). */
export async function readAuditFile(path: string): Promise<AuditRecord[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditRecord);
}

/** Ids of the JSON lines of a file (missing file: none). */
export async function idsInFile(path: string, field: AuditIdField = 'id'): Promise<string[]> {
  return (await readAuditFile(path)).map((record) => record[field]);
}

/** Ids waiting in a spool at rest (after close): the .replaying file first, then the spool. */
export async function spooledIds(spoolPath: string): Promise<string[]> {
  return [...(await idsInFile(`${spoolPath}.replaying`)), ...(await idsInFile(spoolPath))];
}

/** Every record of a Redis stream the stream sink wrote, oldest first (read in pages). */
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

export async function idsInStream(redis: RedisClient, streamKey: string, field: AuditIdField = 'id'): Promise<string[]> {
  return (await readAuditStream(redis, streamKey)).map((record) => record[field]);
}

/** First occurrence of each id, in order: what a consumer sees after dropping duplicates. */
export function dedupe(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}
