// Doubles and helpers for the audit unit tests: records, a sink that fails or stalls on
// command, temp dirs, and metric deltas.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toAuditLine, type AuditLine, type AuditRecord } from '../../../src/audit/audit-record.js';
import type { AuditSink } from '../../../src/audit/audit-sink.js';
import { metrics } from '../../../src/metrics/metrics.js';

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

export function idOfLine(line: AuditLine): string {
  return (JSON.parse(line) as AuditRecord).id;
}

/** A test double sink: keeps what it is given; fails while `failing`; stalls while held. */
export class FakeSink implements AuditSink {
  readonly batches: AuditRecord[][] = [];
  failing = false;
  closed = false;
  attempts = 0;
  private gate: Promise<void> | undefined;
  private releaseGate: (() => void) | undefined;

  constructor(readonly name: string = 'fake') {}

  get ids(): string[] {
    return this.batches.flat().map((r) => r.id);
  }

  /** Writes from now on wait until the returned function is called. */
  hold(): () => void {
    this.gate = new Promise((resolve) => {
      this.releaseGate = resolve;
    });
    return () => {
      this.gate = undefined;
      this.releaseGate?.();
    };
  }

  async write(lines: readonly AuditLine[]): Promise<void> {
    this.attempts++;
    if (this.gate) await this.gate;
    if (this.failing) throw new Error(`${this.name} sink is down`);
    this.batches.push(lines.map((line) => JSON.parse(line) as AuditRecord));
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'agentgw-audit-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Ids of the JSON lines of a file (missing file: none). */
export async function idsInFile(path: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => (JSON.parse(line) as AuditRecord).id);
}

/** Ids waiting in a spool at rest (after close): the .replaying file first, then the spool. */
export async function spooledIds(spoolPath: string): Promise<string[]> {
  return [...(await idsInFile(`${spoolPath}.replaying`)), ...(await idsInFile(spoolPath))];
}

export async function auditCount(sink: string, result: string): Promise<number> {
  const { values } = await metrics.auditRecords.get();
  return values.find((v) => v.labels.sink === sink && v.labels.result === result)?.value ?? 0;
}

/** First occurrence of each id, in order: what a consumer sees after dropping duplicates. */
export function dedupe(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}
