// A session of the aggregated endpoint `/mcp` as the session store keeps it (docs/mcp.md "The
// aggregated endpoint"): the key that opened it, the revision the gateway negotiated, what the
// client said of itself at initialize (replayed to each server's initialize, so a server sees
// the client's capabilities: sampling, elicitation, roots), and one upstream session per
// server, added when first needed. One encoder, one typed decoder; `kind` keeps it apart from a
// per-server session's record in the same key space (either decoder refuses the other's).

export interface AggregateUpstream {
  /** The upstream URL the server's session lives on. */
  target: string;
  /** The upstream's Mcp-Session-Id; null when the upstream is stateless. */
  upstreamSession: string | null;
}

export interface AggregateSessionRecord {
  keyId: string;
  protocol: string;
  /** The client's initialize `capabilities` and `clientInfo`, as JSON text (bounded at initialize). */
  client: string;
  /** Server name → its upstream session, for the servers used so far. */
  upstreams: Record<string, AggregateUpstream>;
}

const LAYOUT_VERSION = 1;
const KIND = 'aggregate';

export function encodeAggregateRecord(record: AggregateSessionRecord): string {
  const upstreams: Record<string, [string, string | null]> = {};
  for (const [server, upstream] of Object.entries(record.upstreams)) upstreams[server] = [upstream.target, upstream.upstreamSession];
  return JSON.stringify({ v: LAYOUT_VERSION, kind: KIND, key_id: record.keyId, protocol: record.protocol, client: record.client, upstreams });
}

/** The record, or undefined for text that is not one (a per-server session's, another layout): read as a lost session. */
export function decodeAggregateRecord(text: string): AggregateSessionRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const raw = value as Record<string, unknown>;
  if (raw.v !== LAYOUT_VERSION || raw.kind !== KIND) return undefined;
  const { key_id: keyId, protocol, client, upstreams: rawUpstreams } = raw;
  if (typeof keyId !== 'string' || typeof protocol !== 'string' || typeof client !== 'string') return undefined;
  if (typeof rawUpstreams !== 'object' || rawUpstreams === null || Array.isArray(rawUpstreams)) return undefined;
  const upstreams: Record<string, AggregateUpstream> = {};
  for (const [server, pair] of Object.entries(rawUpstreams as Record<string, unknown>)) {
    if (!Array.isArray(pair) || pair.length !== 2) return undefined;
    const [target, upstreamSession] = pair as unknown[];
    if (typeof target !== 'string' || (upstreamSession !== null && typeof upstreamSession !== 'string')) return undefined;
    upstreams[server] = { target, upstreamSession };
  }
  return { keyId, protocol, client, upstreams };
}
