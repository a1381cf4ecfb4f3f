// GET /admin/v1/usage (docs/admin-api.md "Usage"): a report over the rollups, a page of
// groups at a time (usage-report.ts says how big a page is).
import { z } from 'zod';
import { TooManyGroupsError, USAGE_SORTS, usageReportPage } from '../audit/usage-report.js';
import { GatewayError } from '../errors.js';
import type { AdminExchange } from './admin-context.js';
import { sendJson } from './admin-context.js';
import { queryObject, validate } from './admin-request-body.js';

const DAY_MS = 86_400_000;
/** Without `from`, a report covers this long before `to`. */
export const DEFAULT_USAGE_RANGE_MS = 7 * DAY_MS;
/** Groups per page unless `limit` says otherwise, and the most `limit` may ask. */
export const DEFAULT_USAGE_LIMIT = 100;
export const MAX_USAGE_LIMIT = 1_000;

const isoTime = z.string().refine((text) => /^\d{4}-\d\d-\d\dT/.test(text) && !Number.isNaN(Date.parse(text)), { message: 'expected an ISO 8601 time such as 2026-01-31T00:00:00Z' });

export const usageQuery = z.strictObject({
  group_by: z.enum(['key', 'account', 'agent', 'session']).default('key'),
  sort: z.enum(USAGE_SORTS).optional(),
  granularity: z.enum(['hour', 'day']).default('day'),
  from: isoTime.optional(),
  to: isoTime.optional(),
  key_id: z.string().optional(),
  account: z.string().optional(),
  agent: z.string().optional(),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, 'a whole number')
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_USAGE_LIMIT, { message: `between 1 and ${MAX_USAGE_LIMIT}` })
    .optional(),
  cursor: z.string().optional(),
});

/** The cursor is the page's last group, base64url: opaque to clients, any group name survives a URL. */
function encodeCursor(group: string): string {
  return Buffer.from(group, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const group = Buffer.from(cursor, 'base64url').toString('utf8');
  if (group === '' || encodeCursor(group) !== cursor) throw new GatewayError('invalid_request', { param: 'cursor', message: 'cursor: not a next_cursor this API returned' });
  return group;
}

export async function getUsage(x: AdminExchange): Promise<void> {
  const q = validate(usageQuery, queryObject(x.url.searchParams));
  const toMs = q.to === undefined ? x.deps.clock.now() : Date.parse(q.to);
  const fromMs = q.from === undefined ? toMs - DEFAULT_USAGE_RANGE_MS : Date.parse(q.from);
  if (fromMs >= toMs) throw new GatewayError('invalid_request', { param: 'from', message: 'from: must be before to' });
  const retentionMs = x.deps.config().audit.usageRetentionMs;
  // Nothing older than the retention exists; a wider range would only read empty buckets.
  if (toMs - fromMs > retentionMs + DAY_MS) {
    throw new GatewayError('invalid_request', { param: 'from', message: `from: the range may span at most the usage retention (${Math.round(retentionMs / DAY_MS)} days)` });
  }
  // A key's or an account's agent runs: every session of every key would be a report without end.
  if (q.group_by === 'session' && q.key_id === undefined && q.account === undefined) {
    throw new GatewayError('invalid_request', { param: 'group_by', message: 'group_by=session: name the key_id or the account whose sessions to report' });
  }
  const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
  // A sorted report's cursor counts the groups already paged; a name-ordered one's is a group.
  if (after !== undefined && q.sort !== undefined && !/^\d{1,9}$/.test(after)) {
    throw new GatewayError('invalid_request', { param: 'cursor', message: 'cursor: not a next_cursor this API returned for this sort' });
  }
  const page = await usageReportPage(x.deps.usage, {
    sort: q.sort,
    groupBy: q.group_by,
    granularity: q.granularity,
    fromMs,
    toMs,
    keyId: q.key_id,
    account: q.account,
    agent: q.agent,
    limit: q.limit ?? DEFAULT_USAGE_LIMIT,
    after,
  }).catch((err: unknown) => {
    if (err instanceof TooManyGroupsError) throw new GatewayError('invalid_request', { param: 'sort', message: `sort: ${err.message}; name a key_id, account or agent, or a shorter range` });
    throw err;
  });
  sendJson(x.res, 200, {
    group_by: q.group_by,
    ...(q.sort === undefined ? {} : { sort: q.sort }),
    granularity: q.granularity,
    from: new Date(Math.floor(fromMs / 3_600_000) * 3_600_000).toISOString(),
    to: new Date(Math.ceil(toMs / 3_600_000) * 3_600_000).toISOString(),
    data: page.rows,
    next_cursor: page.lastGroup === null ? null : encodeCursor(page.lastGroup),
  });
}
