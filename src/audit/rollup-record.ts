// What a usage rollup reads of an audit line (usage-buckets.ts counts it): the group names,
// the counts, and the agent run (`session_id`) the record belongs to. Lines written by
// toAuditLine (every record this gateway writes or spools) hold these fields in a fixed
// order, as plain strings and numbers; they are read where they stand, without parsing the
// whole object (decision 0016 measured why). Anything else — another order, an escape in a
// value the rollup needs — goes through JSON.parse.

/** What a rollup needs of an audit record. */
export interface RollupRecord {
  ts: string;
  key_id: string;
  account: string;
  agent: string;
  outcome: string;
  tokens_used: number | null;
  latency_ms: number;
  /** Absent from records written before costs were recorded: read as null. */
  cost_usd: number | null;
  /** The agent run (`context.session_id`); null or "" when the request named none. */
  session_id: string | null;
  /** How many tool calls the answer made (the record's `tool_calls`, counted). */
  tool_calls: number;
}

/**
 * Whether a record can be rolled up: its group names are non-empty, hold no whitespace or
 * control character (they are joined by spaces and stored as lines) and do not start with
 * "#" (the Redis hashes' marker field). Every record this gateway writes qualifies (key ids,
 * account and agent names are validated where they are made); a foreign line that does not
 * is appended to the audit and not counted. A session id may hold anything: sessionGroup
 * escapes it.
 */
export function usableRecord(r: RollupRecord): boolean {
  return GROUP_NAME.test(r.key_id) && GROUP_NAME.test(r.account) && GROUP_NAME.test(r.agent) && /^\d{4}-\d\d-\d\dT\d\d/.test(r.ts);
}
const GROUP_NAME = /^[^#\s\x00-\x1f\x7f][^\s\x00-\x1f\x7f]*$/;

/**
 * A session family group, "key_id account agent session": the session id with every byte Lua's
 * `[%s%c%%]` matches (ASCII whitespace, control characters and "%") written %XX, so the
 * group holds no space and the Redis script (usage-rollup.lua.ts) makes the same name.
 */
export function sessionGroup(keyId: string, account: string, agent: string, sessionId: string): string {
  return `${keyId} ${account} ${agent} ${escapeSessionId(sessionId)}`;
}

/** A session id as the last part of its group: no whitespace, control character or bare "%". */
export function escapeSessionId(sessionId: string): string {
  return sessionId.replace(SESSION_ESCAPED, escapeChar);
}
const SESSION_ESCAPED = /[\t\n\v\f\r \x00-\x1f\x7f%]/g;
const escapeChar = (c: string): string => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;

/** The session id of a session group's last part (sessionGroup's escape undone). */
export function sessionOfGroupPart(part: string): string {
  return part.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** The rollup fields of an audit line, or undefined when the line is not a usage record. */
export function parseRollupRecord(line: string): RollupRecord | undefined {
  return readInOrder(line) ?? parseWhole(line);
}

const MARKERS = ['"ts":"', '"key_id":"', '"account":"', '"agent":"', '"outcome":"'] as const;

function readInOrder(line: string): RollupRecord | undefined {
  const values: string[] = [];
  let at = 0;
  for (const marker of MARKERS) {
    const start = line.indexOf(marker, at);
    if (start < 0) return undefined;
    const from = start + marker.length;
    const end = line.indexOf('"', from);
    if (end < 0) return undefined;
    const value = line.slice(from, end);
    if (value.includes('\\')) return undefined;
    values.push(value);
    at = end + 1;
  }
  const tokens = numberAfter(line, '"tokens_used":', at);
  if (tokens === undefined) return undefined;
  const latency = numberAfter(line, '"latency_ms":', tokens.end);
  if (latency === undefined || latency.value === null) return undefined;
  // After the free-form fields (user_id, session_id, model): a quote inside a string is
  // escaped, so a marker cannot match inside one.
  const session = plainStringAfter(line, '"session_id":', latency.end);
  if (session === undefined) return undefined;
  // A line without the cost marker predates costs (and tool calls).
  let cost: number | null = null;
  let toolCalls = 0;
  if (line.includes('"cost_usd":', session.end)) {
    const read = numberAfter(line, '"cost_usd":', session.end);
    if (read === undefined) return undefined;
    cost = read.value;
    const calls = countAfter(line, '"tool_calls":', read.end);
    if (calls === undefined) return undefined;
    toolCalls = calls;
  }
  return {
    ts: values[0]!,
    key_id: values[1]!,
    account: values[2]!,
    agent: values[3]!,
    outcome: values[4]!,
    tokens_used: tokens.value,
    latency_ms: latency.value,
    cost_usd: cost,
    session_id: session.value,
    tool_calls: toolCalls,
  };
}

/** A JSON number or null right after `marker` (searched from `at`). */
function numberAfter(line: string, marker: string, at: number): { value: number | null; end: number } | undefined {
  const start = line.indexOf(marker, at);
  if (start < 0) return undefined;
  const from = start + marker.length;
  let end = from;
  while (end < line.length && line[end] !== ',' && line[end] !== '}') end++;
  const text = line.slice(from, end);
  if (text === 'null') return { value: null, end };
  const value = Number(text);
  return text !== '' && Number.isFinite(value) ? { value, end } : undefined;
}

/** A JSON string without escapes, or null, right after `marker`; undefined for anything else (JSON.parse then reads it). */
function plainStringAfter(line: string, marker: string, at: number): { value: string | null; end: number } | undefined {
  const start = line.indexOf(marker, at);
  if (start < 0) return undefined;
  const from = start + marker.length;
  if (line.startsWith('null', from)) return { value: null, end: from + 4 };
  if (line[from] !== '"') return undefined;
  const close = line.indexOf('"', from + 1);
  if (close < 0) return undefined;
  const value = line.slice(from + 1, close);
  return value.includes('\\') ? undefined : { value, end: close + 1 };
}

/** The length of a JSON array of escape-free strings (or 0 for null) right after `marker`. */
function countAfter(line: string, marker: string, at: number): number | undefined {
  const start = line.indexOf(marker, at);
  if (start < 0) return 0;
  const from = start + marker.length;
  if (line.startsWith('null', from)) return 0;
  if (line[from] !== '[') return undefined;
  let quotes = 0;
  for (let i = from + 1; i < line.length; i++) {
    const c = line.charCodeAt(i);
    // An escape (a quote inside a name) needs the real parser.
    if (c === 0x5c) return undefined;
    if (c === 0x22) quotes++;
    else if (c === 0x5d && quotes % 2 === 0) return quotes / 2;
  }
  return undefined;
}

function parseWhole(line: string): RollupRecord | undefined {
  let r: Partial<Omit<RollupRecord, 'tool_calls'>> & { tool_calls?: unknown };
  try {
    r = JSON.parse(line) as typeof r;
  } catch {
    return undefined;
  }
  if (!r || typeof r.ts !== 'string' || typeof r.key_id !== 'string' || typeof r.account !== 'string' || typeof r.agent !== 'string') return undefined;
  return {
    ts: r.ts,
    key_id: r.key_id,
    account: r.account,
    agent: r.agent,
    outcome: typeof r.outcome === 'string' ? r.outcome : 'error',
    tokens_used: typeof r.tokens_used === 'number' ? r.tokens_used : null,
    latency_ms: typeof r.latency_ms === 'number' ? r.latency_ms : 0,
    cost_usd: typeof r.cost_usd === 'number' ? r.cost_usd : null,
    session_id: typeof r.session_id === 'string' ? r.session_id : null,
    tool_calls: Array.isArray(r.tool_calls) ? r.tool_calls.length : 0,
  };
}
