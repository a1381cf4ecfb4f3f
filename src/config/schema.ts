// The one config schema (docs/design.md, "Configuration file"). YAML keys are the contract; the
// parsed result is normalised to camelCase with durations in milliseconds so code never
// re-parses units. Each part with rules of its own has its own file (agents, plans and key
// limits, admin tokens, redis); this file composes them and holds the small blocks.
// Over 300 lines because it is the composition: the one place every section meets, with the
// cross-section checks (agents against plans, MCP servers against keys' scopes) that need them all.
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { parseTrustProxy } from './trust-proxy.js';
import { reusePortUnsupported } from './reuse-port-support.js';
import { asMapping, duration, evenWithOtherProblems, host, port, positiveDuration } from './schema-primitives.js';
import { AGENT_ID, agentSchema } from './agent-schema.js';
import { DEFAULT_PLANS, PLAN_NAME, planSchema } from './plan-schema.js';
import { adminTokenSchema } from './admin-schema.js';
import { TAGGABLE_KEY, redisSchema } from './redis-schema.js';
import { telemetrySchema } from './telemetry-schema.js';
import { auditPostgresSchema } from './audit-postgres-schema.js';
import { notificationsSchema } from './notifications-schema.js';
import { pricingSchema } from './pricing-schema.js';
import { mcpSchema, mcpServersSchema } from './mcp-schema.js';
import { authSchema, checkDefaultPlans } from './auth-schema.js';
import { adminOidcSchema } from './admin-oidc-schema.js';

export { DEFAULT_STREAM_LEASE_MS, keyLimitsSchema, planWithKeyLimits, type EndUserLimits, type ScopeLimits, type KeyLimits, type Limits, type PlanConfig, type RateWindow, type StreamCap, type ToolQuota } from './plan-schema.js';
export { MIN_ADMIN_TOKEN_CHARS, adminTokenDigest } from './admin-schema.js';
export { TAGGABLE_KEY } from './redis-schema.js';
export { EVENT_TYPES, WebhookSecret, type EventType, type NotificationsConfig, type WebhookConfig } from './notifications-schema.js';
export { MCP_SERVER_NAME, MCP_TOOL_NAME, type McpConfig, type McpServerConfig } from './mcp-schema.js';
export { MAX_MODEL_CHARS, type Pricing } from './pricing-schema.js';
export { JWT_ALGORITHMS, type JwtAlgorithm, type JwtClaimNames, type JwtIssuerConfig } from './auth-schema.js';

// TLS on the public listener (docs/operations.md "TLS"): PEM file paths, watched and reloaded
// without a restart (src/http/tls-certificates.ts). `ca` turns on mutual TLS.
const listenTlsSchema = z
  .strictObject({
    cert: z.string().min(1),
    key: z.string().min(1),
    ca: z.string().min(1).optional(),
    min_version: z.enum(['TLSv1.2', 'TLSv1.3']).default('TLSv1.2'),
    http2: z.boolean().default(true),
    // HTTP/2 limits (docs/security.md, "HTTP/2"): SETTINGS_MAX_CONCURRENT_STREAMS advertised to
    // every client, and the stream resets a connection may send per `per` before GOAWAY.
    max_concurrent_streams: z.number().int().min(1).max(10_000).default(100),
    max_stream_resets: z.number().int().min(1).default(200),
    stream_resets_per: positiveDuration.default(10_000),
  })
  .transform((tls) => ({
    certFile: tls.cert,
    keyFile: tls.key,
    caFile: tls.ca,
    minVersion: tls.min_version,
    http2: tls.http2,
    maxConcurrentStreams: tls.max_concurrent_streams,
    maxStreamResets: tls.max_stream_resets,
    streamResetsPerMs: tls.stream_resets_per,
  }));

export const configSchema = z
  .strictObject({
    listen: z
      .strictObject({
        host: host.default('0.0.0.0'),
        port: port.default(8080),
        // Which peers' X-Forwarded-For to believe (docs/security.md): false, true (one proxy),
        // a hop count, or a list of proxy addresses and CIDR ranges.
        trust_proxy: z
          .unknown()
          .default(false)
          .transform((value, ctx) => {
            const parsed = parseTrustProxy(value);
            if ('trust' in parsed) return parsed.trust;
            for (const message of parsed.problems) ctx.addIssue({ code: 'custom', message });
            return z.NEVER;
          }),
        headers_timeout: positiveDuration.default(10_000),
        request_timeout: positiveDuration.default(30_000),
        keep_alive_timeout: positiveDuration.default(65_000),
        max_header_bytes: z.number().int().min(1024).default(16_384),
        tls: listenTlsSchema.optional(),
        // Several standalone instances on one port (SO_REUSEPORT, Linux): the kernel spreads
        // new connections over them (docs/operations.md "Several instances on one port").
        reuse_port: z
          .boolean()
          .default(false)
          .superRefine((on, ctx) => {
            const problem = on ? reusePortUnsupported(process.platform, process.versions.node) : undefined;
            if (problem) ctx.addIssue({ code: 'custom', message: problem });
          }),
      })
      .prefault({}),
    admin: z
      .strictObject({
        host: host.default('127.0.0.1'),
        port: port.default(9090),
        // None: the admin API and dashboard paths answer 404.
        tokens: z
          .array(adminTokenSchema)
          .default([])
          .refine((tokens) => new Set(tokens.map((t) => t.name)).size === tokens.length, { message: 'admin token names must be unique' }),
        // Dashboard sign-in sessions (docs/dashboard.md): ended after this long unused, and
        // after session_max_age whatever their use.
        session_idle_timeout: positiveDuration.default(30 * 60_000),
        session_max_age: positiveDuration.default(12 * 3_600_000),
        // The names the admin listener answers to in `Host` (docs/security.md): set, any other
        // Host is 421, so a DNS-rebound name cannot reach /metrics or /upstreamz from a browser.
        hosts: z.array(z.string().min(1).toLowerCase()).default([]),
        // Dashboard sign-in through the identity provider (docs/identity.md); admin tokens keep working beside it.
        oidc: adminOidcSchema.optional(),
      })
      .prefault({}),
    redis: redisSchema.optional(),
    // Credentials besides keys: JWT access tokens from configured issuers (docs/identity.md).
    auth: authSchema,
    limits: z
      .strictObject({
        max_body_bytes: z.number().int().min(64).default(1_048_576),
        max_message_chars: z.number().int().min(1).default(32_000),
        // Deeper bodies are refused before JSON.parse, which would stall the event loop on them.
        max_json_depth: z.number().int().min(1).max(10_000).default(64),
      })
      .prefault({}),
    rate_limits: z
      .strictObject({
        scope: z.enum(['account', 'key']).default('account'),
        on_store_error: z.enum(['allow', 'deny']).default('allow'),
        // Shared mode only: reserve a busy subject's next requests ahead (docs/rate-limits.md "Leases").
        lease: z.boolean().default(true),
      })
      .prefault({}),
    plans: z
      .record(z.string().regex(PLAN_NAME, 'plan names are letters, digits, "_" or "-"'), planSchema)
      .prefault(DEFAULT_PLANS),
    // USD per 1,000 tokens_used by model (docs/configuration.md "pricing"); absent: no cost is computed.
    pricing: pricingSchema.optional(),
    agents: z
      .record(z.string().regex(AGENT_ID, 'agent ids are lowercase letters, digits, "_" or "-", starting with a letter or digit'), agentSchema, {
        // A file without `agents:` at all: say what is missing and what it looks like, not zod's type words.
        error: (issue) => (issue.input === undefined ? 'missing: name the agents this gateway serves, e.g. "agents: { demo: { upstream: http://127.0.0.1:8081/api/v1 } }" (docs/configuration.md)' : undefined),
      })
      .refine((agents) => Object.keys(agents).length > 0, { message: 'configure at least one agent' }),
    stream: z
      .strictObject({
        heartbeat: positiveDuration.default(15_000),
        idle_timeout: positiveDuration.default(60_000),
        max_duration: positiveDuration.default(600_000),
      })
      .prefault({}),
    keys: z
      .strictObject({
        store: z.enum(['file', 'redis']).default('file'),
        file: z.string().min(1).default('var/keys.json'),
        cache_ttl: positiveDuration.default(30_000),
        negative_cache_ttl: positiveDuration.default(5_000),
        failed_auth: z
          .strictObject({
            max_attempts: z.number().int().min(1).default(20),
            per: positiveDuration.default(60_000),
            block_for: positiveDuration.default(60_000),
          })
          .prefault({}),
      })
      .prefault({}),
    audit: z
      .strictObject({
        file: z.string().min(1).optional(),
        // Keys written with the stream (docs/operations.md, "Key layout") take its hash tag.
        redis_stream: z
          .string()
          .min(1)
          .regex(TAGGABLE_KEY, 'use braces only for one hash tag, e.g. "agentgw:audit" or "{agentgw}:audit"')
          .optional(),
        max_len: z.number().int().min(1).default(1_000_000),
        spool: z.string().min(1).default('var/audit-spool.jsonl'),
        // The write-ahead journal (docs/audit.md "The journal"); default beside the spool, false turns it off.
        journal: z.union([z.string().min(1), z.literal(false)]).optional(),
        batch_size: z.number().int().min(1).default(256),
        flush_interval: positiveDuration.default(50),
        max_queue: z.number().int().min(1).default(10_000),
        // Usage rollups (docs/admin-api.md "Usage"): off, the audit is written without them
        // (usage reports then find nothing new); hour and day buckets kept this long past their period.
        usage_rollups: z.boolean().default(true),
        usage_retention: positiveDuration.default(90 * 86_400_000),
        // Default: `usage/` beside the audit file (var/usage).
        usage_dir: z.string().min(1).optional(),
        // The admin audit trail; with neither set it follows the usage audit (see the transform).
        admin_file: z.string().min(1).optional(),
        admin_redis_stream: z.string().min(1).optional(),
        // Redis stream sinks (usage and admin trail): a batch counts as written once up to this many of the master's
        // connected replicas have it (WAIT), so a failover cannot lose it; 0: once the master has it.
        wait_replicas: z.number().int().min(0).max(16).default(0),
        // A PostgreSQL table beside the file or stream sink (docs/audit.md "PostgreSQL").
        postgres: auditPostgresSchema.optional(),
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
        file: z.string().min(1).optional(),
      })
      .prefault({}),
    shutdown_grace: duration.default(30_000),
    telemetry: telemetrySchema.prefault({}),
    // Signed webhooks (docs/notifications.md); no webhook configured: nothing is published.
    notifications: notificationsSchema.prefault({}),
    // The MCP front door (docs/mcp.md); no server configured: /mcp is not routed.
    mcp_servers: mcpServersSchema,
    mcp: mcpSchema,
  })
  .superRefine((config, ctx) => {
    // Runs even when other keys have problems (evenWithOtherProblems): each block may then be
    // anything the file holds, so nothing here assumes its shape.
    const keys = asMapping(config.keys);
    const audit = asMapping(config.audit);
    const hasRedis = asMapping(config.redis) !== undefined;
    if (keys?.store === 'redis' && !hasRedis) {
      ctx.addIssue({ code: 'custom', path: ['keys', 'store'], message: '"redis" needs a redis block (or REDIS_URL)' });
    }
    if (audit?.admin_redis_stream && !hasRedis) {
      ctx.addIssue({ code: 'custom', path: ['audit', 'admin_redis_stream'], message: 'the Redis stream sink needs a redis block (or REDIS_URL)' });
    }
    if (audit?.redis_stream && !hasRedis) {
      ctx.addIssue({ code: 'custom', path: ['audit', 'redis_stream'], message: 'the Redis stream sink needs a redis block (or REDIS_URL)' });
    }
    if (typeof audit?.wait_replicas === 'number' && audit.wait_replicas > 0 && !audit.redis_stream) {
      ctx.addIssue({ code: 'custom', path: ['audit', 'wait_replicas'], message: 'only applies to the Redis stream sink; set audit.redis_stream or remove it' });
    }
    checkDefaultPlans(config.auth, asMapping(config.plans) ?? DEFAULT_PLANS, ctx);
    const hosts = new Map<string, string>();
    for (const [id, agent] of Object.entries(asMapping(config.agents) ?? {})) {
      const host = asMapping(agent)?.host;
      if (typeof host !== 'string') continue;
      const other = hosts.get(host);
      if (other) ctx.addIssue({ code: 'custom', path: ['agents', id, 'host'], message: `host "${host}" is already used by agent "${other}"` });
      hosts.set(host, id);
    }
  }, evenWithOtherProblems)
  .transform((c) => ({
    listen: {
      host: c.listen.host,
      port: c.listen.port,
      trustProxy: c.listen.trust_proxy,
      headersTimeoutMs: c.listen.headers_timeout,
      requestTimeoutMs: c.listen.request_timeout,
      keepAliveTimeoutMs: c.listen.keep_alive_timeout,
      maxHeaderBytes: c.listen.max_header_bytes,
      tls: c.listen.tls,
      reusePort: c.listen.reuse_port,
    },
    admin: { host: c.admin.host, port: c.admin.port, tokens: c.admin.tokens, sessionIdleTimeoutMs: c.admin.session_idle_timeout, sessionMaxAgeMs: c.admin.session_max_age, hosts: c.admin.hosts, oidc: c.admin.oidc },
    redis: c.redis,
    auth: { jwt: c.auth.jwt },
    limits: { maxBodyBytes: c.limits.max_body_bytes, maxMessageChars: c.limits.max_message_chars, maxJsonDepth: c.limits.max_json_depth },
    rateLimits: { scope: c.rate_limits.scope, onStoreError: c.rate_limits.on_store_error, lease: c.rate_limits.lease },
    plans: new Map(Object.entries(c.plans)),
    pricing: c.pricing ?? null,
    agents: new Map(Object.entries(c.agents).map(([id, agent]) => [id, { id, ...agent }])),
    stream: { heartbeatMs: c.stream.heartbeat, idleTimeoutMs: c.stream.idle_timeout, maxDurationMs: c.stream.max_duration },
    keys: {
      store: c.keys.store,
      file: c.keys.file,
      cacheTtlMs: c.keys.cache_ttl,
      negativeCacheTtlMs: c.keys.negative_cache_ttl,
      failedAuth: { maxAttempts: c.keys.failed_auth.max_attempts, perMs: c.keys.failed_auth.per, blockForMs: c.keys.failed_auth.block_for },
    },
    audit: {
      // With neither sink set, the file sink is on (docs/design.md, "Configuration file").
      file: c.audit.file ?? (c.audit.redis_stream ? undefined : DEFAULT_AUDIT_FILE),
      redisStream: c.audit.redis_stream,
      maxLen: c.audit.max_len,
      spool: c.audit.spool,
      // Unset: beside the spool (openAuditLog derives it), so each process's pair of files stays together.
      journal: c.audit.journal,
      batchSize: c.audit.batch_size,
      flushIntervalMs: c.audit.flush_interval,
      maxQueue: c.audit.max_queue,
      usageRollups: c.audit.usage_rollups,
      usageRetentionMs: c.audit.usage_retention,
      usageDir: c.audit.usage_dir ?? join(dirname(c.audit.file ?? DEFAULT_AUDIT_FILE), 'usage'),
      ...adminAuditSinks(c.audit),
      waitReplicas: c.audit.wait_replicas,
      postgres: c.audit.postgres,
    },
    log: { level: c.log.level, file: c.log.file },
    shutdownGraceMs: c.shutdown_grace,
    telemetry: c.telemetry,
    notifications: c.notifications,
    mcpServers: new Map(Object.entries(c.mcp_servers).map(([name, server]) => [name, { name, ...server }])),
    mcp: c.mcp,
  }));

/**
 * Where admin writes are recorded. Each sink is on when set; with neither set the trail
 * follows the usage audit: the stream `agentgw:admin-audit` when the usage audit writes a
 * Redis stream (every instance's admin writes in one place), else `admin-audit.jsonl`
 * beside the audit file (var/admin-audit.jsonl).
 */
function adminAuditSinks(audit: { file?: string | undefined; admin_file?: string | undefined; admin_redis_stream?: string | undefined; redis_stream?: string | undefined }): {
  adminFile: string | undefined;
  adminRedisStream: string | undefined;
} {
  if (audit.admin_file !== undefined || audit.admin_redis_stream !== undefined) return { adminFile: audit.admin_file, adminRedisStream: audit.admin_redis_stream };
  if (audit.redis_stream !== undefined) return { adminFile: undefined, adminRedisStream: DEFAULT_ADMIN_AUDIT_STREAM };
  return { adminFile: join(dirname(audit.file ?? DEFAULT_AUDIT_FILE), 'admin-audit.jsonl'), adminRedisStream: undefined };
}

const DEFAULT_AUDIT_FILE = 'var/audit.jsonl';
export const DEFAULT_ADMIN_AUDIT_STREAM = 'agentgw:admin-audit';

export type GatewayConfig = z.output<typeof configSchema>;
export type AdminTokenConfig = GatewayConfig['admin']['tokens'][number];
export type AgentConfig = GatewayConfig['agents'] extends Map<string, infer A> ? A : never;

