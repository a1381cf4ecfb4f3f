// A gateway MCP session as the session store keeps it (docs/mcp.md "Sessions across
// instances"): the server, the key that opened it (a session answers only its own key), the
// upstream target and the upstream's own session id. One encoder, one typed decoder; `v` is the
// layout's version, so a later layout can be read beside this one during a rolling upgrade.

export interface McpSessionRecord {
  server: string;
  keyId: string;
  /** The upstream URL the session lives on (an upstream session is one server's). */
  target: string;
  /** The upstream's Mcp-Session-Id; null when the upstream is stateless. */
  upstreamSession: string | null;
  /** The protocol revision negotiated at initialize. */
  protocol: string;
}

const LAYOUT_VERSION = 1;

export function encodeSessionRecord(record: McpSessionRecord): string {
  return JSON.stringify({ v: LAYOUT_VERSION, server: record.server, key_id: record.keyId, target: record.target, upstream_session: record.upstreamSession, protocol: record.protocol });
}

/** The record, or undefined for text that is not a record of a known layout (read as a lost session). */
export function decodeSessionRecord(text: string): McpSessionRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const raw = value as Record<string, unknown>;
  if (raw.v !== LAYOUT_VERSION) return undefined;
  const { server, key_id: keyId, target, upstream_session: upstreamSession, protocol } = raw;
  if (typeof server !== 'string' || typeof keyId !== 'string' || typeof target !== 'string' || typeof protocol !== 'string') return undefined;
  if (upstreamSession !== null && typeof upstreamSession !== 'string') return undefined;
  return { server, keyId, target, upstreamSession, protocol };
}
