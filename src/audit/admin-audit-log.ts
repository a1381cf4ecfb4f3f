// The admin audit trail (docs/admin-api.md): one JSON line per admin write —
//   {"id", "ts", "request_id", "actor", "action", "key_id", "changed": [...], "new_key_id"?}
// or, for a revocation of access tokens, {"id", "ts", "request_id", "actor", "action": "token.revoke", "jti" | "sub", "until"};
// never a raw key, a hash or a token. The admin API writes it through its own
// BatchingAuditLog (sinks and spools of their own), the CLI straight to the sinks
// (DirectAuditWriter); both through the same entries below, so a record has one shape
// whoever made the change. Awaited: when a write is reported done, its record is in its
// sink (or, for the admin API, its spool).
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { AuditLine } from './audit-record.js';
import type { AuditSink } from './audit-sink.js';

export type AdminAction = 'key.create' | 'key.update' | 'key.revoke' | 'key.rotate';

export interface AdminAuditEntry extends AdminWriteOrigin {
  /** The admin token's configured name, `oidc:<email or sub>` for a person, or `cli:<os user>` for the CLI. */
  actor: string;
  action: AdminAction;
  key_id: string;
  /** Names of the fields the write set or changed. */
  changed: string[];
  /** A rotation's new key. */
  new_key_id?: string;
}

/**
 * A revocation of JWT access tokens (docs/identity.md "Revocation"): which `jti` or `sub`,
 * and until when. The identifiers are the provider's, never a token.
 */
export interface TokenRevocationEntry extends AdminWriteOrigin {
  action: 'token.revoke';
  jti?: string;
  sub?: string;
  until: string;
}

/** Who made a write: the request it came with and its actor (for a person signed in through the identity provider, also their `sub` and email). */
export interface AdminWriteOrigin {
  request_id: string;
  actor: string;
  actor_sub?: string;
  actor_email?: string | null;
}

/** Where the lines go: a BatchingAuditLog (the admin API) or a DirectAuditWriter (the CLI). */
export interface AdminAuditWriter {
  recordLine(line: AuditLine): void;
  flush(): Promise<void>;
  close(): Promise<void>;
}

export class AdminAuditLog {
  constructor(
    private readonly writer: AdminAuditWriter,
    private readonly clock: Clock,
  ) {}

  /** Queues the entry and waits until every sink has written (or spooled) it. */
  async record(entry: AdminAuditEntry | TokenRevocationEntry): Promise<void> {
    const line = JSON.stringify({ id: randomUUID(), ts: new Date(this.clock.now()).toISOString(), ...entry });
    this.writer.recordLine(line);
    await this.writer.flush();
  }

  /** A key was made; `fields` are the names (as the admin API spells them) of what the request set. */
  keyCreated(origin: AdminWriteOrigin, keyId: string, fields: string[]): Promise<void> {
    return this.record({ ...origin, action: 'key.create', key_id: keyId, changed: [...fields].sort() });
  }

  keyUpdated(origin: AdminWriteOrigin, keyId: string, changed: string[]): Promise<void> {
    return this.record({ ...origin, action: 'key.update', key_id: keyId, changed });
  }

  keyRevoked(origin: AdminWriteOrigin, keyId: string): Promise<void> {
    return this.record({ ...origin, action: 'key.revoke', key_id: keyId, changed: ['revoked_at'] });
  }

  keyRotated(origin: AdminWriteOrigin, keyId: string, newKeyId: string): Promise<void> {
    return this.record({ ...origin, action: 'key.rotate', key_id: keyId, changed: ['expires_at', 'replaced_by'], new_key_id: newKeyId });
  }

  tokensRevoked(origin: AdminWriteOrigin, revoked: { jti?: string; sub?: string; until: string }): Promise<void> {
    return this.record({ ...origin, action: 'token.revoke', ...revoked });
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}

/**
 * For a short-lived process (the CLI): each flush writes the pending lines to every sink and
 * throws if any sink failed. No spool: the process has no later moment to replay one, so a
 * record it cannot write is an error it reports, never a file nobody reads.
 */
export class DirectAuditWriter implements AdminAuditWriter {
  private pending: AuditLine[] = [];

  constructor(private readonly sinks: readonly AuditSink[]) {}

  recordLine(line: AuditLine): void {
    this.pending.push(line);
  }

  async flush(): Promise<void> {
    const lines = this.pending;
    this.pending = [];
    if (lines.length === 0) return;
    const results = await Promise.allSettled(this.sinks.map((sink) => sink.write(lines)));
    const failed = results.flatMap((result, i) => (result.status === 'rejected' ? [`${this.sinks[i]!.name}: ${result.reason instanceof Error ? result.reason.message : String(result.reason)}`] : []));
    if (failed.length > 0) throw new Error(`the admin audit record could not be written (${failed.join('; ')})`);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.sinks.map((sink) => sink.close()));
  }
}
