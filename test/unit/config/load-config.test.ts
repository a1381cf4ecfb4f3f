import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { formatDurationMs, parseDurationMs } from '../../../src/config/duration.js';
import { parseYamlWithEnv, MissingEnvironmentVariableError } from '../../../src/config/env-substitution.js';
import { parseConfigText } from '../../../src/config/load-config.js';
import { configProblems as problems, MINIMAL_CONFIG as MINIMAL } from '../../helpers/config-problems.js';
import { adminTokenDigest } from '../../../src/config/schema.js';


describe('durations', () => {
  it('parses every unit and refuses a bare number', () => {
    expect(parseDurationMs('100ms')).toBe(100);
    expect(parseDurationMs('15s')).toBe(15_000);
    expect(parseDurationMs('1m')).toBe(60_000);
    expect(parseDurationMs('2h')).toBe(7_200_000);
    expect(parseDurationMs('1d')).toBe(86_400_000);
    expect(parseDurationMs('1.5s')).toBe(1_500);
    expect(parseDurationMs('100')).toBeUndefined();
    expect(parseDurationMs('1 week')).toBeUndefined();
    expect(formatDurationMs(86_400_000)).toBe('1d');
    expect(formatDurationMs(1_500)).toBe('1500ms');
  });
});

describe('env substitution', () => {
  it('replaces ${NAME}, applies ${NAME:-default}, keeps $${ literal, and names missing variables', () => {
    expect(parseYamlWithEnv('v: a ${X} b ${Y:-dflt} c $${Z}', { X: '1' })).toEqual({ v: 'a 1 b dflt c ${Z}' });
    expect(() => parseYamlWithEnv('a: ${MISSING_ONE}\nb: ${MISSING_TWO}', {})).toThrow(MissingEnvironmentVariableError);
    expect(() => parseYamlWithEnv('a: ${MISSING_ONE}', {})).toThrow(/MISSING_ONE/);
    // A reference in a comment is not a value: nothing to substitute, nothing missing.
    expect(parseYamlWithEnv('a: 1 # was ${OLD_SETTING}', {})).toEqual({ a: 1 });
  });

  it('puts values into the parsed scalars: "#", ": ", quotes and newlines stay inside the one value', () => {
    const hostile = 'p#ss: word\n"x": 1\nagents: {} # ${NESTED}';
    const text = [
      'plain: ${V}',
      'quoted: "${V}"',
      'single: \'pre-${V}\'',
      'flow: { a: ${V}, b: [${V}] }',
      'url: redis://:${V}@127.0.0.1:6379/0',
      'block: |',
      '  ${V}',
      'after: kept',
    ].join('\n');
    expect(parseYamlWithEnv(text, { V: hostile })).toEqual({
      plain: hostile,
      quoted: hostile,
      single: `pre-${hostile}`,
      flow: { a: hostile, b: [hostile] },
      url: `redis://:${hostile}@127.0.0.1:6379/0`,
      block: `${hostile}\n`,
      after: 'kept',
    });
    // A Redis password with "#" is kept whole (text substitution cut it at " #").
    expect(parseYamlWithEnv('password: ${PW}', { PW: 'abc #def' })).toEqual({ password: 'abc #def' });
  });

  it('reads a lone unquoted reference as YAML would read its value (booleans, numbers); quoted stays a string', () => {
    const env = { T: 'true', N: '8080', F: '1.5', S: 'yes please' };
    expect(parseYamlWithEnv('{ t: ${T}, n: ${N}, f: ${F}, s: ${S}, q: "${N}", mixed: x${N} }', env)).toEqual({ t: true, n: 8080, f: 1.5, s: 'yes please', q: '8080', mixed: 'x8080' });
  });

  it('a crafted value cannot add or change keys of the config', () => {
    const config = parseConfigText(`${MINIMAL}redis:\n  url: \${REDIS}\n`, 'test.yaml', { REDIS: 'redis://127.0.0.1:6379/0\nkeys: { store: redis }' });
    expect(config.keys.store).toBe('file');
    const nested = parseConfigText(`${MINIMAL}redis:\n  url: \${REDIS}\n`, 'test.yaml', { REDIS: 'redis://h:1/0\n  prefix: "evil:"' });
    expect(nested.redis).toMatchObject({ url: 'redis://h:1/0\n  prefix: "evil:"', prefix: 'agentgw:' });
  });
});

describe('config schema', () => {
  it('fills every default of the configuration file contract (docs/design.md)', () => {
    const config = parseConfigText(MINIMAL, 'test.yaml', {});
    expect(config.listen).toMatchObject({ host: '0.0.0.0', port: 8080, trustProxy: { mode: 'none' } });
    expect(config.admin).toEqual({ host: '127.0.0.1', port: 9090, tokens: [], sessionIdleTimeoutMs: 30 * 60_000, sessionMaxAgeMs: 12 * 3_600_000, hosts: [] });
    expect(config.redis).toBeUndefined();
    expect(config.limits).toEqual({ maxBodyBytes: 1_048_576, maxMessageChars: 32_000, maxJsonDepth: 64 });
    expect(config.rateLimits).toEqual({ scope: 'account', onStoreError: 'allow', lease: true });
    expect(config.plans.get('starter')?.windows).toEqual([
      { name: 'minute', limit: 60, windowMs: 60_000, kind: 'requests' as const, scope: 'subject' as const },
      { name: 'day', limit: 10_000, windowMs: 86_400_000, kind: 'requests' as const, scope: 'subject' as const },
    ]);
    expect(config.plans.get('pro')?.windows.map((w) => w.limit)).toEqual([300, 100_000]);
    expect(config.plans.get('scale')?.windows).toEqual([]);
    expect(config.agents.get('support')).toMatchObject({ id: 'support', upstream: 'http://127.0.0.1:8081/api/v1', headersTimeoutMs: 30_000, maxTokens: 4096 });
    expect(config.stream).toEqual({ heartbeatMs: 15_000, idleTimeoutMs: 60_000, maxDurationMs: 600_000 });
    expect(config.keys).toMatchObject({ store: 'file', file: 'var/keys.json' });
    expect(config.audit).toMatchObject({ file: 'var/audit.jsonl', redisStream: undefined, maxLen: 1_000_000, spool: 'var/audit-spool.jsonl' });
    expect(config.shutdownGraceMs).toBe(30_000);
  });

  it('turns the file sink off when only the Redis stream is set, and needs redis for it', () => {
    const config = parseConfigText(`${MINIMAL}redis: {}\naudit: { redis_stream: agentgw:audit }\n`, 'test.yaml', {});
    expect(config.audit.file).toBeUndefined();
    expect(config.redis).toEqual({ mode: 'single', url: 'redis://127.0.0.1:6379/0', prefix: 'agentgw:', commandTimeoutMs: 100 });
    expect(problems(`${MINIMAL}audit: { redis_stream: agentgw:audit }\n`)).toEqual([expect.stringContaining('audit.redis_stream')]);
  });

  it('applies PORT and REDIS_URL overrides', () => {
    const config = parseConfigText(MINIMAL, 'test.yaml', { PORT: '9999', REDIS_URL: 'redis://10.0.0.1:6380/2' });
    expect(config.listen.port).toBe(9999);
    expect(config.redis).toMatchObject({ mode: 'single', url: 'redis://10.0.0.1:6380/2' });
  });

  it('names the bad key and what is allowed', () => {
    expect(problems('agents: {}\n')).toEqual([expect.stringMatching(/^agents: configure at least one agent/)]);
    expect(problems(`${MINIMAL}stream: { heartbeat: 15 }\n`)).toEqual([expect.stringMatching(/^stream\.heartbeat: expected a duration with a unit/)]);
    expect(problems(`${MINIMAL}rate_limits: { scope: user }\n`)[0]).toMatch(/^rate_limits\.scope: .*account.*key/);
    expect(problems(`${MINIMAL}listn: {}\n`)).toEqual(['(top level): unknown key "listn" (did you mean "listen"?)']);
    expect(problems(`${MINIMAL}listen: { trust_proxy: [10.0.0.0/8, 10.0.0.300, "fd00::/200"] }\n`)).toEqual([
      expect.stringMatching(/^listen\.trust_proxy: "10\.0\.0\.300" is not an IP address or CIDR range/),
      expect.stringMatching(/^listen\.trust_proxy: "fd00::\/200": the prefix length .* 0 to 128/),
    ]);
    expect(problems(`${MINIMAL}listen: { trust_proxy: always }\n`)[0]).toMatch(/^listen\.trust_proxy: got "always"; expected false, true \(one proxy in front\), a number of proxy hops/);
    expect(problems(`${MINIMAL}limits: { max_json_depth: 0 }\n`)[0]).toMatch(/^limits\.max_json_depth/);
    expect(problems('agents:\n  Bad_Id:\n    upstream: http://x/api/v1\n')[0]).toMatch(/^agents\.Bad_Id: agent ids are lowercase/);
    expect(problems('agents:\n  a:\n    upstream: ftp://x/\n')[0]).toMatch(/^agents\.a\.upstream: must be an http/);
    expect(problems(`${MINIMAL}plans: { p: { windows: [ { requests: 0, per: 1m } ] } }\n`)[0]).toMatch(/^plans\.p\.windows\.0\.requests/);
    expect(problems('agents: [\n')[0]).toMatch(/^YAML syntax/);
    expect(problems(`${MINIMAL}keys: { store: redis }\n`)[0]).toMatch(/^keys\.store: "redis" needs a redis block/);
  });

  it('reads the three Redis modes (docs/configuration.md)', () => {
    const cluster = parseConfigText(
      `${MINIMAL}redis:\n  mode: cluster\n  nodes: [{ host: 10.0.0.1, port: 7000 }, { host: redis-b, port: "7001" }]\n  password: s3cret\n  tls: {}\n`,
      'test.yaml',
      {},
    );
    expect(cluster.redis).toEqual({
      mode: 'cluster',
      nodes: [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-b', port: 7001 }],
      password: 's3cret',
      tls: {},
      prefix: 'agentgw:',
      commandTimeoutMs: 100,
    });
    const sentinel = parseConfigText(
      `${MINIMAL}redis:\n  mode: sentinel\n  sentinels: [{ host: s1, port: 26379 }]\n  name: gw-master\n  tls: { ca: ca.pem, cert: c.pem, key: k.pem, servername: redis.internal }\n`,
      'test.yaml',
      {},
    );
    expect(sentinel.redis).toMatchObject({
      mode: 'sentinel',
      sentinels: [{ host: 's1', port: 26379 }],
      name: 'gw-master',
      tls: { ca: 'ca.pem', cert: 'c.pem', key: 'k.pem', servername: 'redis.internal' },
    });
    const single = parseConfigText(`${MINIMAL}redis: { url: "rediss://cache.internal:6380/1", username: gw, password: pw }\n`, 'test.yaml', {});
    expect(single.redis).toMatchObject({ mode: 'single', url: 'rediss://cache.internal:6380/1', username: 'gw', password: 'pw' });
  });

  it('says what each Redis mode is missing or does not use', () => {
    expect(problems(`${MINIMAL}redis: { mode: cluster }\n`)).toEqual([expect.stringMatching(/^redis\.nodes: mode cluster needs redis\.nodes: list the seed nodes/)]);
    expect(problems(`${MINIMAL}redis: { mode: cluster, nodes: [] }\n`)).toEqual([expect.stringMatching(/^redis\.nodes: list at least one node/)]);
    expect(problems(`${MINIMAL}redis: { mode: sentinel }\n`)).toEqual([
      expect.stringMatching(/^redis\.sentinels: mode sentinel needs redis\.sentinels/),
      expect.stringMatching(/^redis\.name: mode sentinel needs redis\.name: give the master's name/),
    ]);
    expect(problems(`${MINIMAL}redis: { mode: cluster, nodes: [{ host: a, port: 1 }], url: "redis://a:1" }\n`)).toEqual([
      expect.stringMatching(/^redis\.url: not used with mode cluster; .*REDIS_URL.*redis\.password/),
    ]);
    // REDIS_URL is a single-server override: with a cluster it is refused, not silently ignored.
    expect(problems(`${MINIMAL}redis: { mode: cluster, nodes: [{ host: a, port: 1 }] }\n`, { REDIS_URL: 'redis://a:1' })).toEqual([expect.stringMatching(/^redis\.url: not used with mode cluster/)]);
    expect(problems(`${MINIMAL}redis: { nodes: [{ host: a, port: 1 }] }\n`)).toEqual([expect.stringMatching(/^redis\.nodes: not used with mode single; remove it or set redis\.mode/)]);
    expect(problems(`${MINIMAL}redis: { mode: cluster, nodes: [{ host: a, port: 0 }] }\n`)[0]).toMatch(/^redis\.nodes\.0\.port/);
    expect(problems(`${MINIMAL}redis: { mode: mesh }\n`)[0]).toMatch(/^redis\.mode: .*single.*cluster.*sentinel/);
    expect(problems(`${MINIMAL}redis: { tls: { cert: c.pem } }\n`)).toEqual([expect.stringMatching(/^redis\.tls: a client certificate needs both tls\.cert and tls\.key/)]);
    expect(problems(`${MINIMAL}redis: { url: "redis://:pw@a:1", password: other }\n`)).toEqual([expect.stringMatching(/^redis\.password: the url has a password too/)]);
    expect(problems(`${MINIMAL}redis: { prefix: "{gw}:" }\n`)).toEqual([expect.stringMatching(/^redis\.prefix: must not contain "\{" or "\}"/)]);
    expect(problems(`${MINIMAL}redis: {}\naudit: { redis_stream: "a{}b" }\n`)).toEqual([expect.stringMatching(/^audit\.redis_stream: use braces only for one hash tag/)]);
    expect(problems(`${MINIMAL}audit: { wait_replicas: 1 }\n`)).toEqual([expect.stringMatching(/^audit\.wait_replicas: only applies to the Redis stream sink/)]);
  });

  it('accepts the shipped config/gateway.yaml', async () => {
    const text = await readFile('config/gateway.yaml', 'utf8');
    const config = parseConfigText(text, 'config/gateway.yaml', {});
    expect([...config.agents.keys()]).toContain('demo');
  });
});

describe('admin tokens and the admin audit trail', () => {
  const SECRET = 'adm-0123456789abcdef';
  it('hashes `token` at load (from ${ENV}), takes `token_sha256` as is, and keeps no raw token', () => {
    const digest = createHash('sha256').update('viewer-token-0123456789').digest('hex');
    const config = parseConfigText(
      `${MINIMAL}admin:\n  tokens:\n    - { name: ops, token: "\${ADMIN_TOKEN}", role: admin }\n    - { name: dash, token_sha256: "${digest.toUpperCase()}", role: viewer }\n`,
      'test.yaml',
      { ADMIN_TOKEN: SECRET },
    );
    expect(config.admin.tokens.map((t) => [t.name, t.role, t.sha256.toString('hex')])).toEqual([
      ['ops', 'admin', adminTokenDigest(SECRET).toString('hex')],
      ['dash', 'viewer', digest],
    ]);
    expect(JSON.stringify(config.admin)).not.toContain(SECRET);
  });

  it('refuses a short token, both or neither of token/token_sha256, a bad role, and duplicate names', () => {
    expect(problems(`${MINIMAL}admin: { tokens: [ { name: a, token: short, role: admin } ] }\n`)).toEqual([expect.stringMatching(/^admin\.tokens\.0\.token: .*16/)]);
    expect(problems(`${MINIMAL}admin: { tokens: [ { name: a, role: admin } ] }\n`)).toEqual([expect.stringMatching(/exactly one of "token" and "token_sha256"/)]);
    expect(problems(`${MINIMAL}admin: { tokens: [ { name: a, token: ${SECRET}, role: root } ] }\n`)).toEqual([expect.stringMatching(/^admin\.tokens\.0\.role/)]);
    expect(problems(`${MINIMAL}admin: { tokens: [ { name: a, token: ${SECRET}, role: admin }, { name: a, token: ${SECRET}x, role: viewer } ] }\n`)).toEqual([
      expect.stringMatching(/unique/),
    ]);
  });

  it('sends the admin trail where the usage audit goes unless set, and reads usage retention', () => {
    const embedded = parseConfigText(MINIMAL, 'test.yaml', {});
    expect(embedded.audit).toMatchObject({ adminFile: 'var/admin-audit.jsonl', adminRedisStream: undefined, usageRetentionMs: 90 * 86_400_000, usageDir: 'var/usage' });
    const shared = parseConfigText(`${MINIMAL}redis: {}\naudit: { redis_stream: agentgw:audit, usage_retention: 30d }\n`, 'test.yaml', {});
    expect(shared.audit).toMatchObject({ adminFile: undefined, adminRedisStream: 'agentgw:admin-audit', usageRetentionMs: 30 * 86_400_000 });
    const both = parseConfigText(`${MINIMAL}redis: {}\naudit: { admin_file: a.jsonl, admin_redis_stream: s }\n`, 'test.yaml', {});
    expect(both.audit).toMatchObject({ adminFile: 'a.jsonl', adminRedisStream: 's' });
    expect(problems(`${MINIMAL}audit: { admin_redis_stream: s }\n`)).toEqual([expect.stringContaining('audit.admin_redis_stream')]);
  });
});
