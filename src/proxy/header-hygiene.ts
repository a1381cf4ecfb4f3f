// Which headers cross the gateway, each way. Hop-by-hop headers (RFC 9110 7.6.1) and
// anything the Connection header names stay on their own hop; the client's credentials
// and identity claims never reach the runner; the gateway states identity itself. Client
// header names with an underscore are dropped too (nginx's default): CGI, WSGI and Rack
// turn both `X-Key-Id` and `X_Key_Id` into HTTP_X_KEY_ID, so a runner behind one of them
// could read a client's `X_Key_Id` as the gateway's `X-Key-Id`.
import type { IncomingHttpHeaders } from 'node:http';

// With the connection-specific fields of RFC 9113 8.2.2, which node:http2 refuses to send on a
// response (`HTTP2-Settings` is HTTP/1.1's upgrade to h2c: it describes one connection).
const HOP_BY_HOP = new Set([
  'connection',
  'http2-settings',
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
  // Only an identity body is accepted (src/http/request-header-checks.ts): nothing to declare.
  'content-encoding',
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
  // The gateway sends the client's own when it is valid (src/proxy/traceparent.ts).
  'traceparent',
]);

/**
 * Never relayed to the client from the upstream: framing Node sets itself, our own ids, and
 * what would let a runner set state on the gateway's origin (docs/security.md, "What a
 * runner's answer may do"): cookies, which ignore ports and so reach the admin listener's
 * dashboard on the same host, and HSTS, which is the operator's policy for the host.
 */
const NOT_RELAYED_DOWNSTREAM = new Set([...HOP_BY_HOP, 'x-request-id', 'date', 'set-cookie', 'strict-transport-security']);

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

/**
 * The upstream request headers as flat name/value pairs, which undici takes as they are. (A
 * header object, built with a name per request, is a dictionary V8 reads and writes through
 * its megamorphic inline caches, and undici then walks it again with Object.keys.)
 */
export function upstreamRequestHeaders(client: IncomingHttpHeaders, identity: UpstreamIdentity): string[] {
  const named = connectionTokens(client.connection);
  const headers: string[] = [];
  for (const name in client) {
    // HTTP/2's pseudo-headers (":path", ":authority", …) are that hop's request line, not headers.
    if (NOT_FORWARDED_UPSTREAM.has(name) || named?.has(name) || name.includes('_') || name.charCodeAt(0) === 0x3a) continue;
    const value = client[name];
    if (typeof value === 'string') headers.push(name, value);
    // A header node:http keeps as a list (set-cookie) goes out as one line per value, as
    // undici writes a list.
    else if (value !== undefined) for (const each of value) headers.push(name, each);
  }
  headers.push(
    'x-request-id',
    identity.requestId,
    'x-agent-id',
    identity.agentId,
    'x-key-id',
    identity.keyId,
    'x-account-id',
    identity.accountId,
    'x-forwarded-for',
    identity.forwardedFor,
    'x-forwarded-proto',
    identity.forwardedProto,
  );
  if (identity.forwardedHost) headers.push('x-forwarded-host', identity.forwardedHost);
  // Last, always: with tracing on, each attempt overwrites it with its own client span (upstream-dispatch.ts).
  headers.push('traceparent', identity.traceparent);
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
