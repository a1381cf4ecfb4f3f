// Key operations shared by the CLI and a future dashboard: validate, then talk to the store.
// The raw key exists only in the return value of createKey; nothing here logs or keeps it.
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import { generateApiKey, isKeyId } from './key-format.js';
import type { KeyRecord } from './key-record.js';
import type { KeyStore } from './key-store.js';

export const ACCOUNT_PATTERN = /^[A-Za-z0-9._:@-]{1,128}$/;
const MAX_NAME_LENGTH = 200;

/** A request the caller can fix (bad account, unknown plan, no such key): exit 1 with the message. */
export class KeyServiceError extends Error {
  constructor(message: string) {
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
}

export interface CreatedKey {
  /** Shown once; never stored. */
  rawKey: string;
  record: KeyRecord;
}

export interface KeyServiceOptions {
  store: KeyStore;
  /** The plans and agents keys may name. */
  config: Pick<GatewayConfig, 'plans' | 'agents'>;
  clock?: Clock;
}

export class KeyService {
  private readonly store: KeyStore;
  private readonly clock: Clock;

  constructor(private readonly options: KeyServiceOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
  }

  async createKey(input: CreateKeyInput): Promise<CreatedKey> {
    const { plans, agents } = this.options.config;
    const account = input.account ?? '';
    if (!ACCOUNT_PATTERN.test(account)) {
      throw new KeyServiceError(`account ${JSON.stringify(account)} is not valid: use 1–128 characters from A–Z a–z 0–9 . _ : @ -`);
    }
    if (!plans.has(input.plan)) {
      throw new KeyServiceError(`unknown plan ${JSON.stringify(input.plan)}; the config defines: ${[...plans.keys()].join(', ') || '(none)'}`);
    }
    if (!input.agents || input.agents.length === 0) throw new KeyServiceError('name at least one agent the key may use (--agent ID)');
    const unknown = input.agents.filter((agent) => !agents.has(agent));
    if (unknown.length > 0) {
      throw new KeyServiceError(`unknown agent(s) ${unknown.map((a) => JSON.stringify(a)).join(', ')}; the config defines: ${[...agents.keys()].join(', ')}`);
    }
    const name = input.name ?? '';
    // Control characters would let a name forge lines in `keys list` output.
    if (name.length > MAX_NAME_LENGTH || /[\u0000-\u001f\u007f]/.test(name)) {
      throw new KeyServiceError(`name must be at most ${MAX_NAME_LENGTH} characters without control characters`);
    }
    if (input.expiresInMs !== undefined && !(Number.isFinite(input.expiresInMs) && input.expiresInMs > 0)) {
      throw new KeyServiceError('expires-in must be a positive duration such as 30d, 12h or 90m');
    }
    const nowMs = this.clock.now();
    const { rawKey, keyId, hash } = generateApiKey();
    const record: KeyRecord = {
      keyId,
      hash,
      account,
      plan: input.plan,
      agents: [...new Set(input.agents)],
      name,
      createdAt: new Date(nowMs).toISOString(),
      expiresAt: input.expiresInMs === undefined ? null : new Date(nowMs + input.expiresInMs).toISOString(),
      revokedAt: null,
      lastUsedAt: null,
    };
    await this.store.create(record);
    return { rawKey, record };
  }

  async listKeys(filter: { account?: string | undefined } = {}): Promise<KeyRecord[]> {
    return this.store.list(filter);
  }

  async showKey(keyId: string): Promise<KeyRecord> {
    this.checkKeyId(keyId);
    const record = await this.store.findById(keyId);
    if (!record) throw new KeyServiceError(`no key ${keyId}`);
    return record;
  }

  /** Revokes (idempotently: a second revoke keeps the first time) and returns the record. */
  async revokeKey(keyId: string): Promise<{ record: KeyRecord; alreadyRevoked: boolean }> {
    this.checkKeyId(keyId);
    const existing = await this.store.findById(keyId);
    if (!existing) throw new KeyServiceError(`no key ${keyId}`);
    if (existing.revokedAt !== null) return { record: existing, alreadyRevoked: true };
    const record = await this.store.revoke(keyId, new Date(this.clock.now()).toISOString());
    if (!record) throw new KeyServiceError(`no key ${keyId}`);
    return { record, alreadyRevoked: false };
  }

  private checkKeyId(keyId: string): void {
    if (!isKeyId(keyId)) throw new KeyServiceError(`${JSON.stringify(keyId)} is not a key id (they look like key_ followed by 16 letters and digits)`);
  }
}
