// The admin audit trail (docs/admin-api.md): one JSON line per admin write —
//   {"id", "ts", "request_id", "actor", "action", "key_id", "changed": [...], "new_key_id"?}
// never a raw key, a hash or a token. Written through its own BatchingAuditLog (sinks and
// spools of their own), and awaited: when the admin API answers, the record is in its sink
// or its spool.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { BatchingAuditLog } from './batching-audit-log.js';

export type AdminAction = 'key.create' | 'key.update' | 'key.revoke' | 'key.rotate';

export interface AdminAuditEntry {
  request_id: string;
  /** The admin token's configured name. */
  actor: string;
  action: AdminAction;
  key_id: string;
  /** Names of the fields the write set or changed. */
  changed: string[];
  /** A rotation's new key. */
  new_key_id?: string;
}

export class AdminAuditLog {
  constructor(
    private readonly batches: BatchingAuditLog,
    private readonly clock: Clock,
  ) {}

  /** Queues the entry and waits until every sink has written or spooled it. */
  async record(entry: AdminAuditEntry): Promise<void> {
    const line = JSON.stringify({ id: randomUUID(), ts: new Date(this.clock.now()).toISOString(), ...entry });
    this.batches.recordLine(line);
    await this.batches.flush();
  }

  close(): Promise<void> {
    return this.batches.close();
  }
}
