// The keys API (docs/admin-api.md "Keys"): each handler validates the request's shape,
// calls the KeyService the CLI uses, records the write in the admin audit trail, answers.
import { parseDurationMs } from '../config/duration.js';
import { toKeyView } from '../keys/key-record-codec.js';
import type { KeyLimits } from '../keys/key-record.js';
import type { AdminExchange } from './admin-context.js';
import { keyServiceOf, originOf, sendJson } from './admin-context.js';
import { createKeyBody, emptyBody, listKeysQuery, rotateKeyBody, updateKeyBody } from './admin-key-requests.js';
import { queryObject, readJsonBody, validate } from './admin-request-body.js';


export async function listKeys(x: AdminExchange): Promise<void> {
  const query = validate(listKeysQuery, queryObject(x.url.searchParams));
  const { name_prefix: namePrefix, ...filters } = query;
  const { keys, nextCursor } = await keyServiceOf(x).listKeyPage({ ...filters, namePrefix });
  const nowMs = x.deps.clock.now();
  sendJson(x.res, 200, { data: keys.map((k) => toKeyView(k, nowMs)), next_cursor: nextCursor });
}

export async function createKey(x: AdminExchange): Promise<void> {
  const body = validate(createKeyBody, await readJsonBody(x.req));
  const { rawKey, record } = await keyServiceOf(x).createKey({
    account: body.account,
    plan: body.plan,
    agents: body.agents,
    name: body.name,
    expiresInMs: body.expires_in === undefined ? undefined : parseDurationMs(body.expires_in),
    expiresAt: body.expires_at,
    metadata: body.metadata,
    limits: body.limits as KeyLimits | null | undefined,
    tools: body.tools,
    mcp: body.mcp,
  });
  await x.deps.adminAudit.keyCreated(originOf(x), record.keyId, Object.keys(body));
  sendJson(x.res, 201, { key: rawKey, ...toKeyView(record, x.deps.clock.now()) });
}

export async function showKey(x: AdminExchange, keyId: string): Promise<void> {
  const record = await keyServiceOf(x).showKey(keyId);
  sendJson(x.res, 200, toKeyView(record, x.deps.clock.now()));
}

export async function updateKey(x: AdminExchange, keyId: string): Promise<void> {
  const body = validate(updateKeyBody, await readJsonBody(x.req));
  const { record, changed } = await keyServiceOf(x).updateKey(keyId, {
    name: body.name,
    plan: body.plan,
    agents: body.agents,
    expiresAt: body.expires_at,
    metadata: body.metadata,
    limits: body.limits as KeyLimits | null | undefined,
    tools: body.tools,
    mcp: body.mcp,
  });
  if (changed.length > 0) await x.deps.adminAudit.keyUpdated(originOf(x), keyId, changed);
  sendJson(x.res, 200, toKeyView(record, x.deps.clock.now()));
}

export async function revokeKey(x: AdminExchange, keyId: string): Promise<void> {
  validate(emptyBody, await readJsonBody(x.req, true));
  const { record, alreadyRevoked } = await keyServiceOf(x).revokeKey(keyId);
  if (!alreadyRevoked) await x.deps.adminAudit.keyRevoked(originOf(x), keyId);
  sendJson(x.res, 200, toKeyView(record, x.deps.clock.now()));
}

export async function rotateKey(x: AdminExchange, keyId: string): Promise<void> {
  const body = validate(rotateKeyBody, await readJsonBody(x.req, true));
  const { rawKey, record, previous } = await keyServiceOf(x).rotateKey(keyId, { graceMs: body.grace === undefined ? undefined : parseDurationMs(body.grace) });
  await x.deps.adminAudit.keyRotated(originOf(x), keyId, record.keyId);
  const nowMs = x.deps.clock.now();
  sendJson(x.res, 201, { key: rawKey, ...toKeyView(record, nowMs), previous: toKeyView(previous, nowMs) });
}
