// The one config schema (docs/design.md, "Configuration file"). YAML keys are the contract; the
// parsed result is normalised to camelCase with durations in milliseconds so code never
// re-parses units.
//
// Over 300 lines on purpose: it is the one schema every config key is validated by, so a
// reader finds each key, its default and its error message in one file.
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { parseDurationMs } from './duration.js';
import { parseTrustProxy } from './trust-proxy.js';
import { reusePortUnsupported } from './reuse-port-support.js';

const duration = z
  .union([z.string(), z.number()])
  .transform((value, ctx) => {
    const ms = typeof value === 'number' ? undefined : parseDurationMs(value);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `expected a duration with a unit such as "100ms", "15s", "1m", "1h" or "1d", got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    return ms;
  });

const positiveDuration = duration.refine((ms) => ms > 0, { message: 'must be greater than zero' });

const port = z.coerce.number().int().min(0).max(65535);
const host = z.string().min(1);

const AGENT_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const PLAN_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const upstreamUrl = z
  .string()
  .refine((text) => {
    try {
      const url = new URL(text);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '';
    } catch {
      return false;
    }
  }, { message: 'must be an http:// or https:// base URL without query or fragment, e.g. http://127.0.0.1:8081/api/v1' })
  .transform((text) => text.replace(/\/+$/, ''));

// An agent's runners (docs/upstreams.md): `upstream` is the one-target shorthand of
// `upstreams: [{ url, weight }]`. Outlier ejection is always on for agents with two or more
// targets; active health checks only when `health_check` is set.
const upstreamTargetSchema = z.strictObject({
  url: upstreamUrl,
  weight: z.number().int().min(1).max(1000).default(1),
});

const outlierSchema = z
  .strictObject({
    consecutive_failures: z.number().int().min(1).default(5),
    base_ejection: positiveDuration.default(10_000),
    max_ejection: positiveDuration.default(300_000),
    max_ejected_percent: z.number().int().min(0).max(100).default(50),
  })
  .prefault({})
  .transform((o) => ({
    consecutiveFailures: o.consecutive_failures,
    baseEjectionMs: o.base_ejection,
    maxEjectionMs: Math.max(o.max_ejection, o.base_ejection),
    maxEjectedPercent: o.max_ejected_percent,
  }));

const healthCheckSchema = z
  .strictObject({
    path: z.string().regex(/^\/[^?#\s]*$/, 'must be a path starting with "/", e.g. /healthz'),
    interval: positiveDuration.default(10_000),
    timeout: positiveDuration.default(2_000),
    healthy: z.number().int().min(1).default(2),
    unhealthy: z.number().int().min(1).default(3),
  })
  .transform((h) => ({ path: h.path, intervalMs: h.interval, timeoutMs: h.timeout, healthy: h.healthy, unhealthy: h.unhealthy }));

// TLS to an agent's https:// runners (docs/upstreams.md "HTTPS runners"): PEM file paths, read
// when the pools are built (start and every reload), so a renewed file applies on SIGHUP.
const upstreamTlsSchema = z
  .strictObject({
    ca: z.string().min(1).optional(),
    cert: z.string().min(1).optional(),
    key: z.string().min(1).optional(),
    servername: z.string().min(1).optional(),
    // false only for a runner whose certificate cannot be verified at all (a lab setup).
    reject_unauthorized: z.boolean().default(true),
  })
  .refine((tls) => (tls.cert === undefined) === (tls.key === undefined), { message: 'a client certificate needs both cert and key' })
  .transform((tls) => ({
    ...(tls.ca === undefined ? {} : { caFile: tls.ca }),
    ...(tls.cert === undefined ? {} : { certFile: tls.cert, keyFile: tls.key! }),
    ...(tls.servername === undefined ? {} : { servername: tls.servername }),
    rejectUnauthorized: tls.reject_unauthorized,
  }));

// TLS on the public listener (docs/operations.md "TLS"): PEM file paths, watched and reloaded
// without a restart (src/http/tls-certificates.ts). `ca` turns on mutual TLS.
const listenTlsSchema = z
  .strictObject({
    cert: z.string().min(1),
    key: z.string().min(1),
    ca: z.string().min(1).optional(),
    min_version: z.enum(['TLSv1.2', 'TLSv1.3']).default('TLSv1.2'),
    http2: z.boolean().default(true),
  })
  .transform((tls) => ({ certFile: tls.cert, keyFile: tls.key, caFile: tls.ca, minVersion: tls.min_version, http2: tls.http2 }));

const agentSchema = z
  .strictObject({
    upstream: upstreamUrl.optional(),
    upstreams: z.array(upstreamTargetSchema).min(1).max(64).optional(),
    host: z.string().min(1).transform((h) => h.toLowerCase()).optional(),
    timeout: positiveDuration.default(30_000),
    tools: z.array(z.string().min(1)).optional(),
    max_tokens: z.number().int().min(1).default(4096),
    // Each open stream holds one upstream connection for its whole life, so the default is
    // no cap; set one to protect a runner that cannot take more. Per target.
    max_connections: z.number().int().min(1).optional(),
    // Requests that may wait for a connection beyond max_connections, agent-wide; unset: no bound
    // (a waiting request still ends at `timeout`).
    queue: z.number().int().min(0).optional(),
    outlier: outlierSchema,
    health_check: healthCheckSchema.optional(),
    tls: upstreamTlsSchema.optional(),
  })
  .superRefine((agent, ctx) => {
    if (agent.upstream !== undefined && agent.upstreams !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['upstreams'], message: 'set either "upstream" (one runner) or "upstreams" (a list), not both' });
    } else if (agent.upstream === undefined && agent.upstreams === undefined) {
      ctx.addIssue({ code: 'custom', path: ['upstream'], message: 'set "upstream" (the runner\'s base URL) or "upstreams" (a list of { url, weight })' });
    }
    // A target is named by its origin (metrics, logs, the admin view), so two may not share one.
    const origins = new Set<string>();
    for (const [index, target] of (agent.upstreams ?? []).entries()) {
      const origin = new URL(target.url).origin;
      if (origins.has(origin)) ctx.addIssue({ code: 'custom', path: ['upstreams', index, 'url'], message: `origin ${origin} is listed twice` });
      origins.add(origin);
    }
    if (agent.tls !== undefined && ![agent.upstream, ...(agent.upstreams ?? []).map((t) => t.url)].some((url) => url?.startsWith('https:'))) {
      ctx.addIssue({ code: 'custom', path: ['tls'], message: 'applies to https:// runners only; no upstream of this agent is https://' });
    }
    if (agent.queue !== undefined && agent.max_connections === undefined) {
      ctx.addIssue({ code: 'custom', path: ['queue'], message: '"queue" bounds the wait for a connection beyond "max_connections"; set max_connections too' });
    }
  })
  .transform((agent) => {
    const upstreams = agent.upstreams ?? [{ url: agent.upstream!, weight: 1 }];
    return {
      /** The first target's base URL (the only one for the shorthand). */
      upstream: upstreams[0]!.url,
      upstreams,
      host: agent.host,
      headersTimeoutMs: agent.timeout,
      tools: agent.tools ? new Set(agent.tools) : undefined,
      maxTokens: agent.max_tokens,
      ...(agent.max_connections === undefined ? {} : { maxConnections: agent.max_connections }),
      ...(agent.queue === undefined ? {} : { queue: agent.queue }),
      outlier: agent.outlier,
      healthCheck: agent.health_check,
      ...(agent.tls === undefined ? {} : { tls: agent.tls }),
    };
  });

const windowSchema = z.strictObject({
  requests: z.number().int().min(1),
  per: positiveDuration,
  name: z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"').optional(),
});

const WINDOW_NAMES: Record<number, string> = { 1_000: 'second', 60_000: 'minute', 3_600_000: 'hour', 86_400_000: 'day' };

const tokenWindowSchema = z.strictObject({
  tokens: z.number().int().min(1),
  per: positiveDuration,
  name: z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"').optional(),
});

/**
 * A plan's limits as the limiter takes them: one list, request windows first, then token
 * budgets (`tokens: true`: admission while the budget has tokens left, charged after the
 * answer; docs/rate-limits.md "Token budgets"). Token windows are named `tokens-<period>`.
 */
type WindowInput = z.output<typeof windowSchema>;
type TokenWindowInput = z.output<typeof tokenWindowSchema>;

/** The limiter's window list for request windows and token budgets (the one place that names them). */
export function planWindows(requestWindows: readonly WindowInput[], tokenWindows: readonly TokenWindowInput[]): Array<{ name: string; limit: number; windowMs: number; tokens?: true }> {
  const windows: Array<{ name: string; limit: number; windowMs: number; tokens?: true }> = requestWindows.map((w) => ({
    name: w.name ?? WINDOW_NAMES[w.per] ?? `${w.per / 1000}s`,
    limit: w.requests,
    windowMs: w.per,
  }));
  for (const t of tokenWindows) {
    windows.push({ name: t.name ?? `tokens-${WINDOW_NAMES[t.per] ?? `${t.per / 1000}s`}`, limit: t.tokens, windowMs: t.per, tokens: true });
  }
  return windows;
}

function duplicateName(windows: ReadonlyArray<{ name: string }>): string | undefined {
  const names = windows.map((w) => w.name);
  return names.find((n, i) => names.indexOf(n) !== i);
}

/** How long a stream slot lasts without its holder's refresh (docs/rate-limits.md "Concurrency caps"). */
export const DEFAULT_STREAM_LEASE_MS = 30_000;

// A lease under 1 s would have its holder refresh (every lease/3) faster than a busy event
// loop can promise, and lose slots it still holds.
const concurrencySchema = z.strictObject({
  streams: z.number().int().min(1).max(1_000_000),
  lease: duration.refine((ms) => ms >= 1_000, { message: 'must be at least 1s' }).optional(),
});

/**
 * A concurrency cap as the limiter takes it: at most `streams` open /chat/stream responses
 * per subject; a slot its holder stops refreshing is freed `leaseMs` after its last refresh.
 */
export interface StreamCap {
  streams: number;
  leaseMs: number;
}

function streamCap(input: z.output<typeof concurrencySchema> | undefined): StreamCap | undefined {
  return input === undefined ? undefined : { streams: input.streams, leaseMs: input.lease ?? DEFAULT_STREAM_LEASE_MS };
}

const planSchema = z
  .strictObject({
    windows: z.array(windowSchema).default([]),
    tokens: z.array(tokenWindowSchema).max(16).default([]),
    concurrency: concurrencySchema.optional(),
  })
  // `concurrency` is optional in the type (plans built in code need not name it) but always
  // set here, undefined without a cap, so every parsed plan object has one shape.
  .transform((plan, ctx): { windows: ReturnType<typeof planWindows>; concurrency?: StreamCap | undefined } => {
    const windows = planWindows(plan.windows, plan.tokens);
    const duplicate = duplicateName(windows);
    if (duplicate) ctx.addIssue({ code: 'custom', message: `two windows are named "${duplicate}"; give one a distinct "name"` });
    return { windows, concurrency: streamCap(plan.concurrency) };
  });

/**
 * A key's own `limits` (set with the admin API or `keys create --limits`): the shape of a
 * plan. Stored as written; each part given replaces the plan's (planWithKeyLimits).
 */
export const keyLimitsSchema = z
  .strictObject({
    windows: z.array(windowSchema).max(16).optional(),
    tokens: z.array(tokenWindowSchema).max(16).optional(),
    concurrency: concurrencySchema.optional(),
  })
  .superRefine((limits, ctx) => {
    const duplicate = duplicateName(planWindows(limits.windows ?? [], limits.tokens ?? []));
    if (duplicate) ctx.addIssue({ code: 'custom', message: `two windows are named "${duplicate}"; give one a distinct "name"` });
  });

const ADMIN_TOKEN_NAME = /^[A-Za-z0-9._@-]{1,64}$/;
/** Below this a token could be guessed; generate one with `openssl rand -hex 32`. */
export const MIN_ADMIN_TOKEN_CHARS = 16;

/** SHA-256 of an admin token, the only form the gateway keeps (compared in constant time). */
export function adminTokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

const adminTokenSchema = z
  .strictObject({
    name: z.string().regex(ADMIN_TOKEN_NAME, 'letters, digits, ".", "_", "@" or "-", at most 64'),
    token: z.string().min(MIN_ADMIN_TOKEN_CHARS, `at least ${MIN_ADMIN_TOKEN_CHARS} characters (e.g. openssl rand -hex 32)`).optional(),
    token_sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, 'the lowercase hex SHA-256 of the token (64 characters)').optional(),
    role: z.enum(['admin', 'viewer']),
  })
  .refine((t) => (t.token === undefined) !== (t.token_sha256 === undefined), { message: 'set exactly one of "token" and "token_sha256"' })
  // Hashed here, at load: the raw token is never held past parsing.
  .transform((t) => ({ name: t.name, role: t.role, sha256: t.token !== undefined ? adminTokenDigest(t.token) : Buffer.from(t.token_sha256!, 'hex') }));

/**
 * A Redis key whose slot a hash tag can name (src/redis/redis-key-layout.ts): no braces, or
 * exactly one non-empty `{tag}` and no other brace.
 */
export const TAGGABLE_KEY = /^[^{}]*(\{[^{}]+\}[^{}]*)?$/;

const redisNode = z.strictObject({ host, port: z.coerce.number().int().min(1).max(65535) });

/** What each mode needs, and the keys that belong to another mode (named so the fix is obvious). */
const REDIS_MODE_KEYS = {
  single: { needs: [], foreign: ['nodes', 'sentinels', 'name', 'sentinel_password'] },
  cluster: { needs: ['nodes'], foreign: ['url', 'sentinels', 'name', 'sentinel_password'] },
  sentinel: { needs: ['sentinels', 'name'], foreign: ['url', 'nodes'] },
} as const;

const REDIS_KEY_HINTS: Record<string, string> = {
  nodes: 'list the seed nodes, e.g. nodes: [{ host: 10.0.0.1, port: 6379 }] (any reachable node of the cluster will do; list several)',
  sentinels: 'list the sentinels, e.g. sentinels: [{ host: 10.0.0.1, port: 26379 }]',
  name: 'give the master\'s name as the sentinels know it (the name in "sentinel monitor <name> ...")',
  url: 'the url (or REDIS_URL) addresses one server, for mode single only; credentials go in redis.username/redis.password, TLS in redis.tls',
};

const redisSchema = z
  .strictObject({
    mode: z.enum(['single', 'cluster', 'sentinel']).default('single'),
    url: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://').optional(),
    nodes: z.array(redisNode).min(1, 'list at least one node').optional(),
    sentinels: z.array(redisNode).min(1, 'list at least one sentinel').optional(),
    name: z.string().min(1).optional(),
    username: z.string().min(1).optional(),
    password: z.string().min(1).optional(),
    sentinel_password: z.string().min(1).optional(),
    // PEM file paths; an empty block turns TLS on with the system's CAs.
    tls: z
      .strictObject({
        ca: z.string().min(1).optional(),
        cert: z.string().min(1).optional(),
        key: z.string().min(1).optional(),
        servername: z.string().min(1).optional(),
      })
      .optional(),
    // The gateway puts its own hash tags ({...}) into key names; braces in the prefix would move them.
    prefix: z.string().regex(/^[^{}]*$/, 'must not contain "{" or "}" (the gateway adds its own Redis Cluster hash tags)').default('agentgw:'),
    command_timeout: positiveDuration.default(100),
  })
  .superRefine((redis, ctx) => {
    const rules = REDIS_MODE_KEYS[redis.mode];
    for (const key of rules.needs) {
      if (redis[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `mode ${redis.mode} needs redis.${key}: ${REDIS_KEY_HINTS[key]}` });
    }
    for (const key of rules.foreign) {
      if (redis[key] === undefined) continue;
      const hint = key === 'url' ? `: ${REDIS_KEY_HINTS.url}` : '';
      ctx.addIssue({ code: 'custom', path: [key], message: `not used with mode ${redis.mode}; remove it or set redis.mode${hint}` });
    }
    if (redis.tls && (redis.tls.cert === undefined) !== (redis.tls.key === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['tls'], message: 'a client certificate needs both tls.cert and tls.key' });
    }
    if (redis.url !== undefined) {
      let parsed: URL | undefined;
      try {
        parsed = new URL(redis.url);
      } catch {
        ctx.addIssue({ code: 'custom', path: ['url'], message: 'is not a valid URL, e.g. redis://:password@10.0.0.1:6379/0' });
      }
      if (parsed?.password && redis.password !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['password'], message: 'the url has a password too; give it in one place' });
      }
      if (parsed?.username && redis.username !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['username'], message: 'the url has a username too; give it in one place' });
      }
    }
  })
  .transform((redis) => {
    const common = {
      prefix: redis.prefix,
      commandTimeoutMs: redis.command_timeout,
      ...(redis.username === undefined ? {} : { username: redis.username }),
      ...(redis.password === undefined ? {} : { password: redis.password }),
      ...(redis.tls === undefined ? {} : { tls: redis.tls }),
    };
    switch (redis.mode) {
      case 'single':
        return { mode: 'single' as const, url: redis.url ?? 'redis://127.0.0.1:6379/0', ...common };
      case 'cluster':
        return { mode: 'cluster' as const, nodes: redis.nodes!, ...common };
      case 'sentinel':
        return { mode: 'sentinel' as const, sentinels: redis.sentinels!, name: redis.name!, ...(redis.sentinel_password === undefined ? {} : { sentinelPassword: redis.sentinel_password }), ...common };
    }
  });

const DEFAULT_PLANS = {
  starter: { windows: [{ requests: 60, per: '1m' }, { requests: 10000, per: '1d' }] },
  pro: { windows: [{ requests: 300, per: '1m' }, { requests: 100000, per: '1d' }] },
  scale: { windows: [] },
};

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
      })
      .prefault({}),
    redis: redisSchema.optional(),
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
    agents: z
      .record(z.string().regex(AGENT_ID, 'agent ids are lowercase letters, digits, "_" or "-", starting with a letter or digit'), agentSchema)
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
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
        file: z.string().min(1).optional(),
      })
      .prefault({}),
    shutdown_grace: duration.default(30_000),
  })
  .superRefine((config, ctx) => {
    if (config.keys.store === 'redis' && !config.redis) {
      ctx.addIssue({ code: 'custom', path: ['keys', 'store'], message: '"redis" needs a redis block (or REDIS_URL)' });
    }
    if (config.audit.admin_redis_stream && !config.redis) {
      ctx.addIssue({ code: 'custom', path: ['audit', 'admin_redis_stream'], message: 'the Redis stream sink needs a redis block (or REDIS_URL)' });
    }
    if (config.audit.redis_stream && !config.redis) {
      ctx.addIssue({ code: 'custom', path: ['audit', 'redis_stream'], message: 'the Redis stream sink needs a redis block (or REDIS_URL)' });
    }
    if (config.audit.wait_replicas > 0 && !config.audit.redis_stream) {
      ctx.addIssue({ code: 'custom', path: ['audit', 'wait_replicas'], message: 'only applies to the Redis stream sink; set audit.redis_stream or remove it' });
    }
    const hosts = new Map<string, string>();
    for (const [id, agent] of Object.entries(config.agents)) {
      if (!agent.host) continue;
      const other = hosts.get(agent.host);
      if (other) ctx.addIssue({ code: 'custom', path: ['agents', id, 'host'], message: `host "${agent.host}" is already used by agent "${other}"` });
      hosts.set(agent.host, id);
    }
  })
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
    admin: { host: c.admin.host, port: c.admin.port, tokens: c.admin.tokens, sessionIdleTimeoutMs: c.admin.session_idle_timeout, sessionMaxAgeMs: c.admin.session_max_age },
    redis: c.redis,
    limits: { maxBodyBytes: c.limits.max_body_bytes, maxMessageChars: c.limits.max_message_chars, maxJsonDepth: c.limits.max_json_depth },
    rateLimits: { scope: c.rate_limits.scope, onStoreError: c.rate_limits.on_store_error, lease: c.rate_limits.lease },
    plans: new Map(Object.entries(c.plans)),
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
    },
    log: { level: c.log.level, file: c.log.file },
    shutdownGraceMs: c.shutdown_grace,
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
export type KeyLimits = z.input<typeof keyLimitsSchema>;
export type AgentConfig = GatewayConfig['agents'] extends Map<string, infer A> ? A : never;
export type PlanConfig = GatewayConfig['plans'] extends Map<string, infer P> ? P : never;
export type RateWindow = PlanConfig['windows'][number];

/**
 * A key's own limits over its plan: `windows`, `tokens` and `concurrency`, each where given,
 * replace the plan's (an empty list removes windows or budgets); what is not given is the plan's.
 */
export function planWithKeyLimits(plan: PlanConfig, stored: KeyLimits): PlanConfig {
  // Stored as written (durations as text): validated when set, read into milliseconds here.
  const limits = keyLimitsSchema.parse(stored);
  const own = planWindows(limits.windows ?? [], limits.tokens ?? []);
  const requestWindows = limits.windows === undefined ? plan.windows.filter((w) => w.tokens !== true) : own.filter((w) => w.tokens !== true);
  const tokenWindows = limits.tokens === undefined ? plan.windows.filter((w) => w.tokens === true) : own.filter((w) => w.tokens === true);
  return { ...plan, windows: [...requestWindows, ...tokenWindows], concurrency: limits.concurrency === undefined ? plan.concurrency : streamCap(limits.concurrency) };
}
