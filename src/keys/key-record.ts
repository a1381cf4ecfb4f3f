// A stored API key (docs/design.md, "Keys"). Only the SHA-256 of the raw key is ever stored.
import type { KeyLimits } from '../config/schema.js';
import type { McpScope } from './mcp-scope.js';

export type { KeyLimits, McpScope };
export interface KeyRecord {
  /** Public identifier, safe for logs, audit records and the CLI. */
  keyId: string;
  /** Lowercase hex SHA-256 of the full raw key. */
  hash: string;
  account: string;
  plan: string;
  /** Agent ids this key may call. */
  agents: string[];
  name: string;
  /** ISO 8601 timestamps. */
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /** Free-form labels for the operator (string values), shown by the admin API. */
  metadata: Record<string, string>;
  /** The key's own limits (the shape of a plan), or null: the plan's apply. */
  limits: KeyLimits | null;
  /** The key's tool scope: the only tools its requests may name or be given (null: no restriction). */
  tools: string[] | null;
  /** The key's MCP scope: server → tools ("*": all); null: no MCP server (docs/mcp.md "Scopes"). */
  mcp: McpScope | null;
  /** Rotation: the key this one replaced, and the key that replaced this one. */
  replaces: string | null;
  replacedBy: string | null;
}

/** What a new key is made of; the rest starts empty: never used, not revoked, not rotated. */
export type NewKeyFields = Pick<KeyRecord, 'keyId' | 'hash' | 'account' | 'plan' | 'agents' | 'name' | 'createdAt'> &
  Partial<Pick<KeyRecord, 'expiresAt' | 'metadata' | 'limits' | 'tools' | 'mcp'>>;

/**
 * The one constructor of a new KeyRecord (KeyService.createKey, and the key-store bench that
 * fills a store in its layout): every field present, so no encoder meets a missing one.
 * Checks nothing: the service validates before it calls this.
 */
export function newKeyRecord(fields: NewKeyFields): KeyRecord {
  return {
    keyId: fields.keyId,
    hash: fields.hash,
    account: fields.account,
    plan: fields.plan,
    agents: fields.agents,
    name: fields.name,
    createdAt: fields.createdAt,
    expiresAt: fields.expiresAt ?? null,
    revokedAt: null,
    lastUsedAt: null,
    metadata: fields.metadata ?? {},
    limits: fields.limits ?? null,
    tools: fields.tools ?? null,
    mcp: fields.mcp ?? null,
    replaces: null,
    replacedBy: null,
  };
}

/** What the request pipeline learns about the caller once the key is accepted. */
export interface AuthenticatedKey {
  keyId: string;
  account: string;
  plan: string;
  /** The key's own limits over its plan (null or absent: the plan's); the pipeline resolves them once per key and plan. */
  limits?: KeyLimits | null;
  /** The key's tool scope: the only tools a request on it may name or be given (null or absent: no restriction). */
  tools?: readonly string[] | null;
  /**
   * The end user the credential itself names (a JWT's end-user claim, docs/identity.md): for
   * policy it wins over the body's `context.user_id`. Absent or null: the body's.
   */
  endUser?: string | null;
  /** The MCP scope (server → tools, "*" for all), as a key record holds it; null or absent: no MCP server. */
  mcp?: McpScope | null;
  /** Set when the caller presented a JWT access token rather than a key (the audit's `auth: "jwt"`). */
  token?: TokenIdentity;
}

/** Which token a request came with: for the audit record and revocation, never the token itself. */
export interface TokenIdentity {
  issuer: string;
  sub: string;
  /** null: the token has no `jti`. */
  jti: string | null;
}
