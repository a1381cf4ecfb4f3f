// An agent's part of the config (docs/configuration.md "agents"): its runners, deadlines,
// tool allow-list, connection bounds, health checks, TLS to its runners, and the protocol
// they speak (Agent Chat API, or A2A: docs/a2a.md).
import { z } from 'zod';
import { MAX_MODEL_CHARS } from './pricing-schema.js';
import { asMapping, evenWithOtherProblems, positiveDuration, upstreamUrl } from './schema-primitives.js';

function originOf(url: unknown): string | undefined {
  try {
    return typeof url === 'string' ? new URL(url).origin : undefined;
  } catch {
    return undefined;
  }
}

export const AGENT_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

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

/** What an agent's upstreams speak: this gateway's Agent Chat API, or A2A JSON-RPC (docs/a2a.md). */
export const AGENT_PROTOCOLS = ['agent-chat', 'a2a'] as const;
export type AgentProtocol = (typeof AGENT_PROTOCOLS)[number];

export const agentSchema = z
  .strictObject({
    protocol: z.enum(AGENT_PROTOCOLS).default('agent-chat'),
    upstream: upstreamUrl.optional(),
    upstreams: z.array(upstreamTargetSchema).min(1).max(64).optional(),
    host: z.string().min(1).transform((h) => h.toLowerCase()).optional(),
    timeout: positiveDuration.default(30_000),
    tools: z.array(z.string().min(1)).optional(),
    // The model the runner uses, priced when an answer names none (docs/configuration.md "pricing").
    model: z.string().min(1).max(MAX_MODEL_CHARS).optional(),
    // Who serves the model, as traces name it (`gen_ai.provider.name`, docs/observability.md):
    // `openai`, `anthropic`, … or the operator's own name; absent, traces say `agent-gateway`.
    provider: z.string().min(1).max(MAX_MODEL_CHARS).optional(),
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
    // Runs even when other keys of the agent have problems (evenWithOtherProblems), so its
    // fields may be anything the file holds: nothing here assumes their types.
    if (agent.upstream !== undefined && agent.upstreams !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['upstreams'], message: 'set either "upstream" (one runner) or "upstreams" (a list), not both' });
    } else if (agent.upstream === undefined && agent.upstreams === undefined) {
      ctx.addIssue({ code: 'custom', path: ['upstream'], message: 'set "upstream" (the runner\'s base URL) or "upstreams" (a list of { url, weight })' });
    }
    const targetUrls = (Array.isArray(agent.upstreams) ? agent.upstreams : []).map((target) => asMapping(target)?.url);
    // A target is named by its origin (metrics, logs, the admin view), so two may not share one.
    const origins = new Set<string>();
    for (const [index, url] of targetUrls.entries()) {
      const origin = originOf(url);
      if (origin === undefined) continue;
      if (origins.has(origin)) ctx.addIssue({ code: 'custom', path: ['upstreams', index, 'url'], message: `origin ${origin} is listed twice` });
      origins.add(origin);
    }
    if (agent.tls !== undefined && ![agent.upstream, ...targetUrls].some((url) => typeof url === 'string' && url.startsWith('https:'))) {
      ctx.addIssue({ code: 'custom', path: ['tls'], message: 'applies to https:// runners only; no upstream of this agent is https://' });
    }
    if (agent.queue !== undefined && agent.max_connections === undefined) {
      ctx.addIssue({ code: 'custom', path: ['queue'], message: '"queue" bounds the wait for a connection beyond "max_connections"; set max_connections too' });
    }
  }, evenWithOtherProblems)
  .transform((agent) => {
    const upstreams = agent.upstreams ?? [{ url: agent.upstream!, weight: 1 }];
    return {
      protocol: agent.protocol,
      /** The first target's base URL (the only one for the shorthand); for `a2a`, its JSON-RPC endpoint. */
      upstream: upstreams[0]!.url,
      upstreams,
      host: agent.host,
      headersTimeoutMs: agent.timeout,
      tools: agent.tools ? new Set(agent.tools) : undefined,
      ...(agent.model === undefined ? {} : { model: agent.model }),
      ...(agent.provider === undefined ? {} : { provider: agent.provider }),
      maxTokens: agent.max_tokens,
      ...(agent.max_connections === undefined ? {} : { maxConnections: agent.max_connections }),
      ...(agent.queue === undefined ? {} : { queue: agent.queue }),
      outlier: agent.outlier,
      healthCheck: agent.health_check,
      ...(agent.tls === undefined ? {} : { tls: agent.tls }),
    };
  });
