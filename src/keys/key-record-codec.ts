// KeyRecord ↔ the snake_case field names of docs/design.md, "Keys", which the key file, the
// Redis hashes and the CLI's --json output all use.
import type { KeyLimits, KeyRecord, McpScope } from './key-record.js';
import { checkMcpScope } from './mcp-scope.js';
import { KEY_HASH_PATTERN, KEY_ID_PATTERN } from './key-format.js';

export interface StoredKeyRecord {
  key_id: string;
  hash: string;
  account: string;
  plan: string;
  agents: string[];
  name: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  metadata: Record<string, string>;
  limits: KeyLimits | null;
  /** Absent in records written before tool scopes: read as null (no restriction). */
  tools: string[] | null;
  /** Absent in records written before MCP scopes: read as null (no MCP server). */
  mcp: McpScope | null;
  replaces: string | null;
  replaced_by: string | null;
}

/** What the CLI and dashboard may show: the record without its hash. */
export type PublicKeyView = Omit<StoredKeyRecord, 'hash'>;

export function toStoredRecord(record: KeyRecord): StoredKeyRecord {
  return {
    key_id: record.keyId,
    hash: record.hash,
    account: record.account,
    plan: record.plan,
    agents: [...record.agents],
    name: record.name,
    created_at: record.createdAt,
    expires_at: record.expiresAt,
    revoked_at: record.revokedAt,
    last_used_at: record.lastUsedAt,
    metadata: { ...record.metadata },
    limits: record.limits,
    tools: record.tools === null ? null : [...record.tools],
    mcp: copyScope(record.mcp),
    replaces: record.replaces,
    replaced_by: record.replacedBy,
  };
}

export function toPublicView(record: KeyRecord): PublicKeyView {
  const { hash: _hash, ...view } = toStoredRecord(record);
  return view;
}

function isIsoTimestamp(value: unknown): value is string {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value));
}

function optionalTimestamp(value: unknown, field: string): string | null {
  if (value === null || value === undefined || value === '') return null;
  if (!isIsoTimestamp(value)) throw new Error(`${field} is not an ISO 8601 timestamp`);
  return value;
}

function requiredString(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw new Error(`${field} must be a non-empty string`);
  return value;
}

/** Validates one stored record; throws an Error naming the bad field. */
export function fromStoredRecord(value: unknown): KeyRecord {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('a key record must be an object');
  const raw = value as Record<string, unknown>;
  const keyId = requiredString(raw.key_id, 'key_id');
  if (!KEY_ID_PATTERN.test(keyId)) throw new Error(`key_id ${JSON.stringify(keyId)} is malformed`);
  const hash = requiredString(raw.hash, 'hash');
  if (!KEY_HASH_PATTERN.test(hash)) throw new Error(`hash of ${keyId} is not a lowercase hex SHA-256`);
  const agents = raw.agents;
  if (!Array.isArray(agents) || !agents.every((a) => typeof a === 'string')) throw new Error(`agents of ${keyId} must be an array of strings`);
  if (!isIsoTimestamp(raw.created_at)) throw new Error(`created_at of ${keyId} is not an ISO 8601 timestamp`);
  return {
    keyId,
    hash,
    account: requiredString(raw.account, `account of ${keyId}`),
    plan: requiredString(raw.plan, `plan of ${keyId}`),
    agents: agents as string[],
    name: typeof raw.name === 'string' ? raw.name : '',
    createdAt: raw.created_at,
    expiresAt: optionalTimestamp(raw.expires_at, `expires_at of ${keyId}`),
    revokedAt: optionalTimestamp(raw.revoked_at, `revoked_at of ${keyId}`),
    lastUsedAt: optionalTimestamp(raw.last_used_at, `last_used_at of ${keyId}`),
    metadata: metadataOf(raw.metadata, keyId),
    limits: limitsOf(raw.limits, keyId),
    tools: toolsOf(raw.tools, keyId),
    mcp: mcpOf(raw.mcp, keyId),
    replaces: optionalKeyId(raw.replaces, `replaces of ${keyId}`),
    replacedBy: optionalKeyId(raw.replaced_by, `replaced_by of ${keyId}`),
  };
}

function metadataOf(value: unknown, keyId: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw new Error(`metadata of ${keyId} must be an object of strings`);
  }
  return { ...(value as Record<string, string>) };
}

function limitsOf(value: unknown, keyId: string): KeyLimits | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw new Error(`limits of ${keyId} must be an object`);
  return value as KeyLimits;
}

function toolsOf(value: unknown, keyId: string): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || !value.every((t) => typeof t === 'string')) throw new Error(`tools of ${keyId} must be an array of strings`);
  return [...(value as string[])];
}

function mcpOf(value: unknown, keyId: string): McpScope | null {
  const checked = checkMcpScope(value);
  if ('error' in checked) throw new Error(`${checked.error} (key ${keyId})`);
  return checked.scope;
}

function copyScope(scope: McpScope | null | undefined): McpScope | null {
  if (scope == null) return null;
  const copy: Record<string, string[]> = {};
  for (const server of Object.keys(scope)) copy[server] = [...scope[server]!];
  return copy;
}

function optionalKeyId(value: unknown, field: string): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || !KEY_ID_PATTERN.test(value)) throw new Error(`${field} is not a key id`);
  return value;
}

export type KeyStatus = 'active' | 'expired' | 'revoked';

export function keyStatus(record: KeyRecord, nowMs: number): KeyStatus {
  if (record.revokedAt !== null) return 'revoked';
  if (record.expiresAt !== null && nowMs >= Date.parse(record.expiresAt)) return 'expired';
  return 'active';
}

/** A key as the CLI's --json and the admin API show it: no hash, plus its status now. */
export type KeyView = PublicKeyView & { status: KeyStatus };

export function toKeyView(record: KeyRecord, nowMs: number): KeyView {
  return { ...toPublicView(record), status: keyStatus(record, nowMs) };
}

/** ISO strings of one format compare in time order as strings; parse to be safe with others. */
export function laterIso(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return Date.parse(b) > Date.parse(a) ? b : a;
}
