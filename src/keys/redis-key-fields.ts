// A key record as the Redis store's hash holds it (redis-key-store.ts has the layout): the
// field/value pairs written, and the pairs read back.
import type { KeyRecord } from './key-record.js';

/** Settings an update may write; the rest belongs to creation, revocation or last use. */
export const UPDATABLE_FIELDS = ['name', 'plan', 'agents', 'expires_at', 'metadata', 'limits', 'tools', 'mcp', 'replaces', 'replaced_by'] as const;

export function recordFields(record: KeyRecord): string[] {
  const fields = [
    'key_id', record.keyId,
    'account', record.account,
    'plan', record.plan,
    'agents', JSON.stringify(record.agents),
    'name', record.name,
    'created_at', record.createdAt,
  ];
  if (record.expiresAt !== null) fields.push('expires_at', record.expiresAt);
  if (record.revokedAt !== null) fields.push('revoked_at', record.revokedAt);
  if (record.lastUsedAt !== null) fields.push('last_used_at', record.lastUsedAt);
  if (Object.keys(record.metadata).length > 0) fields.push('metadata', JSON.stringify(record.metadata));
  if (record.limits !== null) fields.push('limits', JSON.stringify(record.limits));
  if (record.tools !== null) fields.push('tools', JSON.stringify(record.tools));
  if (record.mcp != null) fields.push('mcp', JSON.stringify(record.mcp));
  if (record.replaces !== null) fields.push('replaces', record.replaces);
  if (record.replacedBy !== null) fields.push('replaced_by', record.replacedBy);
  return fields;
}

/** The updatable fields as the hash stores them (absent: not stored). */
export function updatableFields(record: KeyRecord): Map<string, string> {
  const all = pairsToObject(recordFields(record));
  return new Map(UPDATABLE_FIELDS.filter((f) => all[f] !== undefined).map((f) => [f, all[f]!]));
}

export function pairsToObject(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) out[pairs[i]!] = pairs[i + 1]!;
  return out;
}
