// The one config schema (docs/design.md, "Configuration file"). YAML keys are the contract; the
// parsed result is normalised to camelCase with durations in milliseconds so code never
// re-parses units.
import { z } from 'zod';
import { parseDurationMs } from './duration.js';

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

const agentSchema = z
  .strictObject({
    upstream: upstreamUrl,
    host: z.string().min(1).transform((h) => h.toLowerCase()).optional(),
    timeout: positiveDuration.default(30_000),
    tools: z.array(z.string().min(1)).optional(),
    max_tokens: z.number().int().min(1).default(4096),
    // Each open stream holds one upstream connection for its whole life, so the default is
    // no cap; set one to protect a runner that cannot take more.
    max_connections: z.number().int().min(1).optional(),
  })
  .transform((agent) => ({
    upstream: agent.upstream,
    host: agent.host,
    headersTimeoutMs: agent.timeout,
    tools: agent.tools ? new Set(agent.tools) : undefined,
    maxTokens: agent.max_tokens,
    ...(agent.max_connections === undefined ? {} : { maxConnections: agent.max_connections }),
  }));

const windowSchema = z.strictObject({
  requests: z.number().int().min(1),
  per: positiveDuration,
  name: z.string().regex(/^[a-z0-9_-]{1,32}$/, 'lowercase letters, digits, "_" or "-"').optional(),
});

const WINDOW_NAMES: Record<number, string> = { 1_000: 'second', 60_000: 'minute', 3_600_000: 'hour', 86_400_000: 'day' };

const planSchema = z
  .strictObject({ windows: z.array(windowSchema).default([]) })
  .transform((plan, ctx) => {
    const windows = plan.windows.map((w) => ({
      name: w.name ?? WINDOW_NAMES[w.per] ?? `${w.per / 1000}s`,
      limit: w.requests,
      windowMs: w.per,
    }));
    const names = windows.map((w) => w.name);
    const duplicate = names.find((n, i) => names.indexOf(n) !== i);
    if (duplicate) ctx.addIssue({ code: 'custom', message: `two windows are named "${duplicate}"; give one a distinct "name"` });
    return { windows };
  });

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
        // Trust X-Forwarded-For from the client only when a proxy in front sets it.
        trust_proxy: z.boolean().default(false),
        headers_timeout: positiveDuration.default(10_000),
        request_timeout: positiveDuration.default(30_000),
        keep_alive_timeout: positiveDuration.default(65_000),
        max_header_bytes: z.number().int().min(1024).default(16_384),
      })
      .prefault({}),
    admin: z.strictObject({ host: host.default('127.0.0.1'), port: port.default(9090) }).prefault({}),
    redis: redisSchema.optional(),
    limits: z
      .strictObject({
        max_body_bytes: z.number().int().min(64).default(1_048_576),
        max_message_chars: z.number().int().min(1).default(32_000),
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
        batch_size: z.number().int().min(1).default(256),
        flush_interval: positiveDuration.default(50),
        max_queue: z.number().int().min(1).default(10_000),
        // Redis stream sink: a batch counts as written once up to this many of the master's
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
    },
    admin: { host: c.admin.host, port: c.admin.port },
    redis: c.redis,
    limits: { maxBodyBytes: c.limits.max_body_bytes, maxMessageChars: c.limits.max_message_chars },
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
      file: c.audit.file ?? (c.audit.redis_stream ? undefined : 'var/audit.jsonl'),
      redisStream: c.audit.redis_stream,
      maxLen: c.audit.max_len,
      spool: c.audit.spool,
      batchSize: c.audit.batch_size,
      flushIntervalMs: c.audit.flush_interval,
      maxQueue: c.audit.max_queue,
      waitReplicas: c.audit.wait_replicas,
    },
    log: { level: c.log.level, file: c.log.file },
    shutdownGraceMs: c.shutdown_grace,
  }));

export type GatewayConfig = z.output<typeof configSchema>;
export type AgentConfig = GatewayConfig['agents'] extends Map<string, infer A> ? A : never;
export type PlanConfig = GatewayConfig['plans'] extends Map<string, infer P> ? P : never;
export type RateWindow = PlanConfig['windows'][number];
