// The shapes of the keys API's requests (docs/admin-api.md): types and unknown fields are
// checked here; what the values may be (known plan and agents, account syntax, limits) is
// the KeyService's to check, so the CLI gets the same rules.
import { z } from 'zod';
import { parseDurationMs } from '../config/duration.js';

const durationText = z.string().refine((text) => parseDurationMs(text) !== undefined, { message: 'expected a duration such as "30d", "12h" or "90m"' });
const metadata = z.record(z.string(), z.string());
// Validated in full by the KeyService (the plan shape of the config schema).
const limits = z.record(z.string(), z.unknown());
// Names, count and duplicates are the KeyService's to check (checkTools).
const tools = z.array(z.string());
// Server names and tool names are the KeyService's to check (checkMcp).
const mcp = z.record(z.string(), z.array(z.string()));

export const createKeyBody = z.strictObject({
  account: z.string(),
  plan: z.string(),
  agents: z.array(z.string()).min(1, 'name at least one agent'),
  name: z.string().optional(),
  expires_in: durationText.optional(),
  expires_at: z.string().optional(),
  metadata: metadata.optional(),
  limits: limits.nullable().optional(),
  tools: tools.nullable().optional(),
  mcp: mcp.nullable().optional(),
});

export const updateKeyBody = z.strictObject({
  name: z.string().optional(),
  plan: z.string().optional(),
  agents: z.array(z.string()).min(1, 'name at least one agent').optional(),
  expires_at: z.string().nullable().optional(),
  metadata: metadata.nullable().optional(),
  limits: limits.nullable().optional(),
  tools: tools.nullable().optional(),
  mcp: mcp.nullable().optional(),
});

export const rotateKeyBody = z.strictObject({ grace: durationText.optional() });

export const listKeysQuery = z.strictObject({
  account: z.string().optional(),
  agent: z.string().optional(),
  status: z.enum(['active', 'expired', 'revoked']).optional(),
  name_prefix: z.string().optional(),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, 'a whole number')
    .transform(Number)
    .optional(),
  cursor: z.string().optional(),
});

/** Revoke takes no settings; a body, if sent, must be an empty object. */
export const emptyBody = z.strictObject({});
