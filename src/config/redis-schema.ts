// The redis block (docs/operations.md "Redis"): single, cluster or sentinel, with what each
// mode needs and the keys that belong to another mode named so the fix is obvious.
import { z } from 'zod';
import { host, positiveDuration } from './schema-primitives.js';

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

export const redisSchema = z
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
