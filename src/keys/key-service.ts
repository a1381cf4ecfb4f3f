// Key operations shared by the CLI and the admin API: validate, then talk to the store.
// The raw key exists only in the return value of createKey and rotateKey; nothing here logs
// or keeps it. Every refusal is a KeyServiceError naming the field (`param`) to fix.
// Over 300 lines on purpose: the one key library the API and the CLI share, so each
// operation's validation sits beside the store call it guards.
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import { keyLimitsSchema, type GatewayConfig, type KeyLimits } from '../config/schema.js';
import { API_KEY_PREFIX, generateApiKey, isKeyId } from './key-format.js';
import { newKeyRecord, type KeyRecord } from './key-record.js';
import type { KeyEvents } from './key-events.js';
import { keyStatus, type KeyStatus } from './key-record-codec.js';
import { nameKey } from './key-pages.js';
import type { KeyPosition, KeyStore } from './key-store.js';
import { checkMcpScope } from './mcp-scope.js';

export const ACCOUNT_PATTERN = /^[A-Za-z0-9._:@-]{1,128}$/;
const MAX_NAME_LENGTH = 200;
const METADATA_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_METADATA_ENTRIES = 50;
const MAX_METADATA_VALUE_LENGTH = 500;
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from './key-list-limits.js';
export { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT };
/** How long a rotated key keeps working when the caller does not say. */
export const DEFAULT_ROTATION_GRACE_MS = 24 * 3_600_000;

/**
 * A request the caller can fix (`invalid`: bad account, unknown plan) or a key that does not
 * exist (`not_found`). The CLI prints the message; the admin API answers 400 with `param`
 * or 404 key_not_found.
 */
/** The longest `expires_in` or rotation `grace` (100 years): past it a date is not representable for long, and no key needs it. */
export const MAX_KEY_DURATION_MS = 36_500 * 86_400_000;

export class KeyServiceError extends Error {
  constructor(
    message: string,
    readonly param?: string,
    readonly code: 'invalid' | 'not_found' = 'invalid',
  ) {
    super(message);
    this.name = 'KeyServiceError';
  }
}

export interface CreateKeyInput {
  account: string;
  plan: string;
  agents: string[];
  name?: string | undefined;
  expiresInMs?: number | undefined;
  /** ISO 8601; an alternative to expiresInMs. */
  expiresAt?: string | undefined;
  metadata?: Record<string, string> | undefined;
  limits?: KeyLimits | null | undefined;
  /** The tool scope (null or absent: no restriction). */
  tools?: string[] | null | undefined;
  /** The MCP scope (null or absent: no MCP server). */
  mcp?: Record<string, string[]> | null | undefined;
}

/** A partial update: only the fields present change. */
export interface UpdateKeyInput {
  name?: string | undefined;
  plan?: string | undefined;
  agents?: string[] | undefined;
  /** null: never expires. */
  expiresAt?: string | null | undefined;
  metadata?: Record<string, string> | null | undefined;
  limits?: KeyLimits | null | undefined;
  /** null clears the tool scope; a list replaces it whole. */
  tools?: string[] | null | undefined;
  /** null clears the MCP scope; an object replaces it whole. */
  mcp?: Record<string, string[]> | null | undefined;
}

export interface ListKeysInput {
  account?: string | undefined;
  agent?: string | undefined;
  status?: KeyStatus | undefined;
  /** Case-insensitive prefix of the key's name. */
  namePrefix?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface CreatedKey {
  /** Shown once; never stored. */
  rawKey: string;
  record: KeyRecord;
}

export interface RotatedKey extends CreatedKey {
  /** The old key as it is now: replaced_by set, expiring when the grace period ends. */
  previous: KeyRecord;
}

export interface KeyServiceOptions {
  store: KeyStore;
  /** The plans and agents keys may name. */
  config: Pick<GatewayConfig, 'plans' | 'agents'>;
  clock?: Clock;
  /** Webhook events of every successful write (key-events.ts); absent: none. */
  events?: KeyEvents | undefined;
}

export class KeyService {
  private readonly store: KeyStore;
  private readonly clock: Clock;

  constructor(private readonly options: KeyServiceOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
  }

  async createKey(input: CreateKeyInput): Promise<CreatedKey> {
    const account = input.account ?? '';
    if (!ACCOUNT_PATTERN.test(account)) {
      throw new KeyServiceError(`account ${JSON.stringify(account)} is not valid: use 1–128 characters from A–Z a–z 0–9 . _ : @ -`, 'account');
    }
    this.checkPlan(input.plan);
    const agents = this.checkAgents(input.agents);
    const name = this.checkName(input.name ?? '');
    const nowMs = this.clock.now();
    let expiresAt: string | null = null;
    if (input.expiresInMs !== undefined && input.expiresAt !== undefined) throw new KeyServiceError('give expires_in or expires_at, not both', 'expires_at');
    if (input.expiresInMs !== undefined) {
      if (!(Number.isFinite(input.expiresInMs) && input.expiresInMs > 0 && input.expiresInMs <= MAX_KEY_DURATION_MS)) {
        throw new KeyServiceError('expires-in must be a positive duration such as 30d, 12h or 90m, at most 36500d', 'expires_in');
      }
      expiresAt = new Date(nowMs + input.expiresInMs).toISOString();
    } else if (input.expiresAt !== undefined) {
      expiresAt = this.checkTimestamp(input.expiresAt, 'expires_at');
      if (Date.parse(expiresAt) <= nowMs) throw new KeyServiceError('expires_at must be in the future', 'expires_at');
    }
    const { rawKey, keyId, hash } = generateApiKey();
    const record = newKeyRecord({
      keyId,
      hash,
      account,
      plan: input.plan,
      agents,
      name,
      createdAt: new Date(nowMs).toISOString(),
      expiresAt,
      metadata: this.checkMetadata(input.metadata ?? {}),
      limits: this.checkLimits(input.limits ?? null),
      tools: checkTools(input.tools ?? null),
      mcp: checkMcp(input.mcp ?? null),
    });
    await this.store.create(record);
    this.options.events?.created(record, nowMs);
    return { rawKey, record };
  }

  /**
   * One page of keys in (created_at, key_id) order, with the cursor of the next page (null:
   * no more). A rare filter may answer a short or empty page with a cursor: the store's
   * work per page is bounded (key-pages.ts, PAGE_SCAN_BUDGET).
   */
  async listKeyPage(input: ListKeysInput = {}): Promise<{ keys: KeyRecord[]; nextCursor: string | null }> {
    const limit = input.limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) throw new KeyServiceError(`limit must be a whole number from 1 to ${MAX_LIST_LIMIT}`, 'limit');
    const after = input.cursor === undefined ? undefined : decodeCursor(input.cursor);
    const namePrefix = input.namePrefix === undefined || input.namePrefix === '' ? undefined : nameKey(this.checkName(input.namePrefix, 'name_prefix'));
    const page = await this.store.listPage({ account: input.account, agent: input.agent, status: input.status, namePrefix, after, limit, nowMs: this.clock.now() });
    return { keys: page.records, nextCursor: page.next === null ? null : encodeCursor(page.next) };
  }

  async showKey(keyId: string): Promise<KeyRecord> {
    this.checkKeyId(keyId);
    const record = await this.store.findById(keyId);
    if (!record) throw notFound(keyId);
    return record;
  }

  /**
   * Applies the fields present in `input`; returns the record and the names of the fields
   * whose value changed (none: nothing was written).
   */
  async updateKey(keyId: string, input: UpdateKeyInput): Promise<{ record: KeyRecord; changed: string[] }> {
    this.checkKeyId(keyId);
    // Validate everything before touching the store: a refused update writes nothing.
    const next: Partial<KeyRecord> = {};
    if (input.name !== undefined) next.name = this.checkName(input.name);
    if (input.plan !== undefined) next.plan = this.checkPlan(input.plan);
    if (input.agents !== undefined) next.agents = this.checkAgents(input.agents);
    if (input.expiresAt !== undefined) next.expiresAt = input.expiresAt === null ? null : this.checkTimestamp(input.expiresAt, 'expires_at');
    if (input.metadata !== undefined) next.metadata = this.checkMetadata(input.metadata ?? {});
    if (input.limits !== undefined) next.limits = this.checkLimits(input.limits);
    if (input.tools !== undefined) next.tools = checkTools(input.tools);
    if (input.mcp !== undefined) next.mcp = checkMcp(input.mcp);
    let changed: string[] = [];
    const result = await this.store.update(keyId, (current) => {
      const record = { ...current, ...next };
      changed = changedFields(current, record);
      return { record: changed.length === 0 ? current : record };
    });
    if (!result) throw notFound(keyId);
    this.options.events?.updated(result.record, changed, this.clock.now());
    return { record: result.record, changed };
  }

  /** Revokes (idempotently: a second revoke keeps the first time) and returns the record. */
  async revokeKey(keyId: string): Promise<{ record: KeyRecord; alreadyRevoked: boolean }> {
    this.checkKeyId(keyId);
    const existing = await this.store.findById(keyId);
    if (existing && existing.revokedAt !== null) return { record: existing, alreadyRevoked: true };
    // Not known here (a key created a moment ago by another process, not yet in a watching
    // store's index) or not revoked: the store's atomic revoke decides.
    const atIso = new Date(this.clock.now()).toISOString();
    const record = await this.store.revoke(keyId, atIso);
    if (!record) throw notFound(keyId);
    const alreadyRevoked = record.revokedAt !== atIso;
    if (!alreadyRevoked) this.options.events?.revoked(record);
    return { record, alreadyRevoked };
  }

  /**
   * Makes a new key with the old one's settings, in one atomic write with the old key's
   * change: the old key now expires when the grace period ends (or earlier, if it already
   * did) and names its replacement. A revoked, expired or already rotated key is refused.
   */
  async rotateKey(keyId: string, options: { graceMs?: number | undefined } = {}): Promise<RotatedKey> {
    this.checkKeyId(keyId);
    const graceMs = options.graceMs ?? DEFAULT_ROTATION_GRACE_MS;
    if (!(Number.isFinite(graceMs) && graceMs >= 0 && graceMs <= MAX_KEY_DURATION_MS)) throw new KeyServiceError('grace must be a duration such as 24h, 30m or 0s, at most 36500d', 'grace');
    const nowMs = this.clock.now();
    const { rawKey, keyId: newKeyId, hash } = generateApiKey();
    const result = await this.store.update(keyId, (current) => {
      const status = keyStatus(current, nowMs);
      if (status !== 'active') throw new KeyServiceError(`${keyId} is ${status}; create a new key instead`, 'key_id');
      if (current.replacedBy !== null) throw new KeyServiceError(`${keyId} was already rotated; its replacement is ${current.replacedBy}`, 'key_id');
      const graceEndMs = nowMs + graceMs;
      const oldExpiryMs = current.expiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(current.expiresAt);
      const created: KeyRecord = {
        ...current,
        keyId: newKeyId,
        hash,
        createdAt: new Date(nowMs).toISOString(),
        revokedAt: null,
        lastUsedAt: null,
        replaces: current.keyId,
        replacedBy: null,
      };
      const record: KeyRecord = { ...current, expiresAt: new Date(Math.min(oldExpiryMs, graceEndMs)).toISOString(), replacedBy: newKeyId };
      return { record, create: created };
    });
    if (!result) throw notFound(keyId);
    this.options.events?.rotated(result.record, result.create!, nowMs);
    return { rawKey, record: result.create!, previous: result.record };
  }

  private checkPlan(plan: string): string {
    const { plans } = this.options.config;
    if (typeof plan !== 'string' || !plans.has(plan)) {
      throw new KeyServiceError(`unknown plan ${JSON.stringify(plan)}; the config defines: ${[...plans.keys()].join(', ') || '(none)'}`, 'plan');
    }
    return plan;
  }

  private checkAgents(agents: string[] | undefined): string[] {
    const configured = this.options.config.agents;
    if (!agents || agents.length === 0) throw new KeyServiceError('name at least one agent the key may use (--agent ID)', 'agents');
    const unknown = agents.filter((agent) => !configured.has(agent));
    if (unknown.length > 0) {
      throw new KeyServiceError(`unknown agent(s) ${unknown.map((a) => JSON.stringify(a)).join(', ')}; the config defines: ${[...configured.keys()].join(', ')}`, 'agents');
    }
    return [...new Set(agents)];
  }

  private checkName(name: string, param = 'name'): string {
    // Control characters would let a name forge lines in `keys list` output.
    if (name.length > MAX_NAME_LENGTH || /[\u0000-\u001f\u007f]/.test(name)) {
      throw new KeyServiceError(`${param} must be at most ${MAX_NAME_LENGTH} characters without control characters`, param);
    }
    return name;
  }

  private checkTimestamp(value: string, param: string): string {
    const ms = Date.parse(value);
    if (!/^\d{4}-\d\d-\d\dT/.test(value) || Number.isNaN(ms)) throw new KeyServiceError(`${param} must be an ISO 8601 timestamp such as 2030-01-31T00:00:00Z`, param);
    return new Date(ms).toISOString();
  }

  private checkMetadata(metadata: Record<string, string>): Record<string, string> {
    const entries = Object.entries(metadata);
    if (entries.length > MAX_METADATA_ENTRIES) throw new KeyServiceError(`metadata holds at most ${MAX_METADATA_ENTRIES} entries`, 'metadata');
    for (const [key, value] of entries) {
      if (!METADATA_KEY.test(key)) throw new KeyServiceError('metadata keys are 1–64 characters from A–Z a–z 0–9 _ . -', `metadata.${key}`);
      if (typeof value !== 'string' || value.length > MAX_METADATA_VALUE_LENGTH) {
        throw new KeyServiceError(`metadata values are strings of at most ${MAX_METADATA_VALUE_LENGTH} characters`, `metadata.${key}`);
      }
    }
    return Object.fromEntries(entries);
  }

  private checkLimits(limits: KeyLimits | null): KeyLimits | null {
    if (limits === null) return null;
    const parsed = keyLimitsSchema.safeParse(limits);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path;
      throw new KeyServiceError(`limits: ${issue.message}`, paramPath(['limits', ...path]));
    }
    // Stored as written (durations as their strings), so a reader sees what was set.
    return JSON.parse(JSON.stringify(limits)) as KeyLimits;
  }

  private checkKeyId(keyId: string): void {
    if (isKeyId(keyId)) return;
    // A raw key pasted where its id belongs: say so, and never write the key back anywhere
    // (an error message ends up in terminals, logs and admin answers).
    if (keyId.startsWith(API_KEY_PREFIX)) throw new KeyServiceError(`that is an API key (${API_KEY_PREFIX}…), not a key id: pass its key_id (key_ followed by 16 letters and digits; \`keys list\` shows them). The key itself was not printed`, 'key_id');
    throw new KeyServiceError(`${JSON.stringify(keyId.length > 40 ? `${keyId.slice(0, 40)}…` : keyId)} is not a key id (they look like key_ followed by 16 letters and digits)`, 'key_id');
  }
}

/** How many tool names a scope holds, and how long one is: a scope is read on every request of its key. */
export const MAX_SCOPE_TOOLS = 64;
export const MAX_TOOL_NAME_LENGTH = 64;
const TOOL_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** A tool scope (docs/policy.md, "Tool scope on keys"): refused whole, naming the field, or kept as given. */
export function checkTools(tools: readonly unknown[] | null): string[] | null {
  if (tools === null) return null;
  if (!Array.isArray(tools)) throw new KeyServiceError('tools must be an array of tool names, or null for no restriction', 'tools');
  if (tools.length > MAX_SCOPE_TOOLS) throw new KeyServiceError(`tools holds at most ${MAX_SCOPE_TOOLS} names (got ${tools.length})`, 'tools');
  const seen = new Set<string>();
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i];
    if (typeof tool !== 'string' || !TOOL_NAME.test(tool)) {
      throw new KeyServiceError(`tools[${i}]: a tool name is 1–${MAX_TOOL_NAME_LENGTH} characters from A–Z a–z 0–9 _ . : -`, `tools[${i}]`);
    }
    if (seen.has(tool)) throw new KeyServiceError(`tools[${i}]: "${tool}" is listed twice`, `tools[${i}]`);
    seen.add(tool);
  }
  return [...(tools as string[])];
}

/** An MCP scope (docs/mcp.md "Scopes"), refused whole naming the field, or kept as given. */
export function checkMcp(scope: unknown): Record<string, string[]> | null {
  const checked = checkMcpScope(scope);
  if ('error' in checked) throw new KeyServiceError(checked.error, checked.param);
  return checked.scope;
}

function notFound(keyId: string): KeyServiceError {
  return new KeyServiceError(`no key ${keyId}`, 'key_id', 'not_found');
}

/** `limits.windows[0].per` from ['limits', 'windows', 0, 'per']. */
export function paramPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : `${out === '' ? '' : '.'}${String(part)}`;
  return out;
}

/** The settings a PATCH may change, by their API names, in a fixed order. */
const SETTINGS: [string, (r: KeyRecord) => unknown][] = [
  ['name', (r) => r.name],
  ['plan', (r) => r.plan],
  ['agents', (r) => r.agents],
  ['expires_at', (r) => r.expiresAt],
  ['metadata', (r) => r.metadata],
  ['limits', (r) => r.limits],
  ['tools', (r) => r.tools],
  ['mcp', (r) => r.mcp ?? null],
];

function changedFields(before: KeyRecord, after: KeyRecord): string[] {
  return SETTINGS.filter(([, get]) => JSON.stringify(get(before)) !== JSON.stringify(get(after))).map(([name]) => name);
}

/** Opaque to clients: the position (creation time, key id) after which the next page starts. */
function encodeCursor(position: KeyPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.keyId])).toString('base64url');
}

function decodeCursor(cursor: string): KeyPosition {
  try {
    if (cursor.length > 200) throw new Error('too long');
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string' && isKeyId(value[1]) && /^\d{4}-\d\d-\d\dT/.test(value[0]) && !Number.isNaN(Date.parse(value[0]))) {
      return { createdAt: value[0], keyId: value[1] };
    }
  } catch {
    // fall through
  }
  throw new KeyServiceError('cursor is not one this API returned', 'cursor');
}
