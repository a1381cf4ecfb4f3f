// Which headers cross the gateway, each way. Hop-by-hop headers (RFC 9110 7.6.1) and
// anything the Connection header names stay on their own hop; the client's credentials
// and identity claims never reach the runner; the gateway states identity itself.
import type { IncomingHttpHeaders } from 'node:http';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Never forwarded upstream: credentials, framing the client chose, and what the gateway sets itself. */
const NOT_FORWARDED_UPSTREAM = new Set([
  ...HOP_BY_HOP,
  'authorization',
  'host',
  'content-length',
  'expect',
  'x-request-id',
  'x-agent-id',
  'x-key-id',
  'x-account-id',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'forwarded',
  'x-real-ip',
]);

/** Never relayed to the client from the upstream: framing Node sets itself, and our own ids. */
const NOT_RELAYED_DOWNSTREAM = new Set([...HOP_BY_HOP, 'x-request-id', 'date']);

function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  if (!value) return undefined;
  // Nearly every peer sends just "keep-alive" or "close", which name no header: no split, no Set.
  if (typeof value === 'string' && value.length <= 10) {
    const lower = value.toLowerCase();
    if (lower === 'keep-alive' || lower === 'close') return undefined;
  }
  const text = Array.isArray(value) ? value.join(',') : value;
  const tokens = new Set<string>();
  for (const token of text.split(',')) {
    const name = token.trim().toLowerCase();
    if (name && name !== 'close' && name !== 'keep-alive') tokens.add(name);
  }
  return tokens.size > 0 ? tokens : undefined;
}

export interface UpstreamIdentity {
  requestId: string;
  agentId: string;
  forwardedFor: string;
  forwardedProto: string;
  forwardedHost: string | undefined;
  keyId: string;
  accountId: string;
  traceparent: string;
}

/** Builds the upstream request headers as a flat object for undici. */
export function upstreamRequestHeaders(client: IncomingHttpHeaders, identity: UpstreamIdentity): Record<string, string | string[]> {
  const named = connectionTokens(client.connection);
  const headers: Record<string, string | string[]> = {};
  for (const name in client) {
    if (NOT_FORWARDED_UPSTREAM.has(name) || named?.has(name)) continue;
    const value = client[name];
    if (value !== undefined) headers[name] = value;
  }
  headers['x-request-id'] = identity.requestId;
  headers['x-agent-id'] = identity.agentId;
  headers['x-key-id'] = identity.keyId;
  headers['x-account-id'] = identity.accountId;
  headers['x-forwarded-for'] = identity.forwardedFor;
  headers['x-forwarded-proto'] = identity.forwardedProto;
  if (identity.forwardedHost) headers['x-forwarded-host'] = identity.forwardedHost;
  headers.traceparent = identity.traceparent;
  return headers;
}

/**
 * Appends every upstream response header that may reach the client to `out` as flat
 * name/value pairs (the form `res.writeHead` takes without building a header map), except
 * the names in `skip`: headers the gateway sets itself on this response, which must not go
 * out twice (undici gives names in lower case).
 */
export function appendRelayedHeaders(upstream: Record<string, string | string[] | undefined>, out: Array<string | string[]>, skip?: ReadonlySet<string>): void {
  const named = connectionTokens(upstream.connection);
  for (const name in upstream) {
    if (NOT_RELAYED_DOWNSTREAM.has(name) || named?.has(name) || skip?.has(name)) continue;
    const value = upstream[name];
    if (value !== undefined) out.push(name, value);
  }
}
