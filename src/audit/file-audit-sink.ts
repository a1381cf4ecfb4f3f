// Audit sink: JSON Lines appended to a file through one long-lived handle. The handle is
// opened on first write (creating the directory) and reopened after a failure, so a
// broken descriptor does not keep the sink down once the disk is fine again.
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { AuditLine } from './audit-record.js';
import type { AuditSink, AuditSinkName } from './audit-sink.js';

export class FileAuditSink implements AuditSink {
  private handle: Promise<FileHandle> | undefined;

  /** `name` labels metrics and names the spool: 'file' for usage records, 'admin-file' for the admin trail. */
  constructor(
    readonly path: string,
    readonly name: AuditSinkName = 'file',
  ) {}

  async write(lines: readonly AuditLine[]): Promise<void> {
    if (lines.length === 0) return;
    this.handle ??= this.open();
    const opening = this.handle;
    let handle: FileHandle;
    try {
      handle = await opening;
    } catch (error) {
      if (this.handle === opening) this.handle = undefined;
      throw error;
    }
    try {
      // appendFile loops until every byte is written; one call per batch keeps lines whole.
      await handle.appendFile(toJsonLines(lines));
    } catch (error) {
      if (this.handle === opening) this.handle = undefined;
      await handle.close().catch(() => {});
      throw error;
    }
  }

  async close(): Promise<void> {
    const opening = this.handle;
    this.handle = undefined;
    const handle = await opening?.catch(() => undefined);
    await handle?.close();
  }

  private async open(): Promise<FileHandle> {
    await mkdir(dirname(this.path), { recursive: true });
    return open(this.path, 'a');
  }
}

/** One record per line, each ending in a newline. */
export function toJsonLines(lines: readonly AuditLine[]): string {
  return `${lines.join('\n')}\n`;
}
