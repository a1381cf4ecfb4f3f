// The MCP front door's part of the config (docs/mcp.md "Configuration"): `mcp_servers`, each a
// Streamable HTTP server (`upstream` or `upstreams`, its deadline, the headers the gateway sends
// it, its tool allow-list) or a stdio server (`command`: one child process per gateway session,
// at most `max_sessions` live per instance, started with a minimal environment plus its `env`
// and in its `cwd`; docs/mcp.md "stdio servers"), and the front door's own settings under `mcp`
// (allowed browser origins, idle session expiry, body and answer bounds).
import { z } from 'zod';
import { positiveDuration, upstreamUrl } from './schema-primitives.js';

/** A server's name: it is a path segment (`/mcp/{server}`) and the prefix of `{server}__{tool}`, so no `__` inside. */
export const MCP_SERVER_NAME = /^[a-z0-9](?:[a-z0-9-]|_(?!_)){0,62}$/;
/** A tool or prompt name as an allow-list or a key scope may hold it ("*": all of the server's). */
export const MCP_TOOL_NAME = /^(?:\*|[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,127})$/;

const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a header name');
// Headers the gateway itself sets on every upstream request: a configured value would be overwritten or break framing.
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'mcp-session-id', 'content-type', 'accept']);

// Environment variable names a child may be given; values come through `${VAR}` substitution like the rest of the config.
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'an environment variable name');

const targetSchema = z.strictObject({ url: upstreamUrl, weight: z.number().int().min(1).max(1000).default(1) });

const serverSchema = z
  .strictObject({
    upstream: upstreamUrl.optional(),
    upstreams: z.array(targetSchema).min(1).max(64).optional(),
    command: z.array(z.string().min(1)).min(1).max(64).optional(),
    max_sessions: z.number().int().min(1).max(10_000).default(50),
    // stdio only: the child's environment beyond PATH, HOME, LANG and TMPDIR (it never inherits the gateway's), and its working directory.
    env: z.record(envName, z.string().max(32_768)).optional(),
    cwd: z.string().min(1).max(4096).optional(),
    timeout: positiveDuration.default(60_000),
    headers: z.record(headerName, z.string().max(8192)).default({}),
    tools: z.array(z.string().regex(MCP_TOOL_NAME, 'a tool name')).max(4096).optional(),
    prompts: z.array(z.string().regex(MCP_TOOL_NAME, 'a prompt name')).max(4096).optional(),
  })
  .superRefine((server, ctx) => {
    const kinds = [server.upstream !== undefined, server.upstreams !== undefined, server.command !== undefined].filter(Boolean).length;
    if (kinds !== 1) ctx.addIssue({ code: 'custom', message: 'set exactly one of "upstream", "upstreams" (Streamable HTTP) or "command" (stdio)' });
    // Each kind's own settings: a stdio child gets `env`, not HTTP headers, and an HTTP server has no process to configure.
    if (server.command === undefined) {
      if (server.env !== undefined) ctx.addIssue({ code: 'custom', path: ['env'], message: '"env" is for stdio servers ("command"); a Streamable HTTP server gets "headers"' });
      if (server.cwd !== undefined) ctx.addIssue({ code: 'custom', path: ['cwd'], message: '"cwd" is for stdio servers ("command")' });
    } else if (Object.keys(server.headers).length > 0) {
      ctx.addIssue({ code: 'custom', path: ['headers'], message: '"headers" are sent to a Streamable HTTP server; give a stdio server its credentials in "env"' });
    }
    for (const name of Object.keys(server.headers)) {
      if (RESERVED_HEADERS.has(name.toLowerCase())) ctx.addIssue({ code: 'custom', path: ['headers', name], message: 'the gateway sets this header itself' });
    }
  })
  .transform((server) => ({
    transport: server.command === undefined ? ('http' as const) : ('stdio' as const),
    upstreams: server.command !== undefined ? [] : (server.upstreams ?? [{ url: server.upstream!, weight: 1 }]),
    command: server.command ?? null,
    maxSessions: server.max_sessions,
    env: server.env ?? {},
    cwd: server.cwd ?? null,
    timeoutMs: server.timeout,
    headers: server.headers,
    // null: every tool (prompt) the server lists; a set: only those ("*" in it: every one).
    tools: server.tools === undefined || server.tools.includes('*') ? null : new Set(server.tools),
    prompts: server.prompts === undefined || server.prompts.includes('*') ? null : new Set(server.prompts),
  }));

export const mcpServersSchema = z
  .record(z.string().regex(MCP_SERVER_NAME, 'MCP server names are lowercase letters, digits, "-" or single "_", starting with a letter or digit'), serverSchema)
  .refine((servers) => Object.keys(servers).length <= 256, { message: 'at most 256 MCP servers' })
  .default({});

export const mcpSchema = z
  .strictObject({
    // Browser origins that may call the front door (DNS rebinding protection). A request with an
    // Origin header not listed is 403; requests without one (non-browser clients) pass.
    allowed_origins: z.array(z.string().regex(/^https?:\/\/[^/\s]+$/, 'an origin: scheme://host[:port]')).max(256).default([]),
    session_idle: positiveDuration.default(3_600_000),
    max_body: z.number().int().min(1024).max(64 * 1024 * 1024).default(4 * 1024 * 1024),
    // What one upstream answer may hold before the gateway cuts it (a hostile server's endless
    // list); for a stdio server, also the longest line (one message) its child may print.
    max_response: z.number().int().min(1024).max(256 * 1024 * 1024).default(16 * 1024 * 1024),
  })
  .prefault({})
  .transform((m) => ({ allowedOrigins: new Set(m.allowed_origins), sessionIdleMs: m.session_idle, maxBodyBytes: m.max_body, maxResponseBytes: m.max_response }));

export type McpServerConfig = z.output<typeof serverSchema> & { name: string };
export type McpConfig = z.output<typeof mcpSchema>;
