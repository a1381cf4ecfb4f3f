// The records a sink's database refused for their data, set aside so the records behind
// them flow (docs/audit.md "Records PostgreSQL refuses"). A JSON Lines file beside the
// spool (var/audit-spool.postgres.rejected.jsonl), one line per record:
//   {"rejected_at":"…","sink":"postgres","table":"agentgw_audit","code":"22P02","reason":"…","record":{…}}
// `record` is the audit record's own line, unchanged, so an operator can read it with jq and
// replay it by putting `.record` back in the sink's spool (the docs say how). Each append is
// fdatasync'd before the sink reports the batch written: a record is set aside, never lost.
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { AuditLine } from './audit-record.js';

export interface RejectedAuditRecord {
  line: AuditLine;
  code: string;
  reason: string;
}

export class RejectedAuditRecords {
  private handle: FileHandle | undefined;

  constructor(
    readonly path: string,
    private readonly sink: string,
    private readonly table: string,
    private readonly now: () => number,
  ) {}

  /** Appends the records and resolves once they are on disk; throws when they are not (the batch is then retried). */
  async append(records: readonly RejectedAuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    const at = new Date(this.now()).toISOString();
    const text = records
      .map((r) => `{"rejected_at":${JSON.stringify(at)},"sink":${JSON.stringify(this.sink)},"table":${JSON.stringify(this.table)},"code":${JSON.stringify(r.code)},"reason":${JSON.stringify(r.reason)},"record":${r.line}}\n`)
      .join('');
    try {
      this.handle ??= await this.openForAppend();
      await this.handle.appendFile(text);
      await this.handle.datasync();
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => {});
  }

  private async openForAppend(): Promise<FileHandle> {
    await mkdir(dirname(this.path), { recursive: true });
    return open(this.path, 'a');
  }
}
