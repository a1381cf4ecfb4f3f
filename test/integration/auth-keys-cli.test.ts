// `agent-gateway keys ...` run in process through commander, against a temp config: the
// file store by default, and the Redis store through REDIS_URL.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FileKeyStore } from '../../src/keys/file-key-store.js';
import { KeyAuthenticator } from '../../src/auth/key-authenticator.js';
import { FailedAuthThrottle } from '../../src/auth/failed-auth-throttle.js';
import { hashApiKey, parseApiKey } from '../../src/keys/key-format.js';
import { ManualClock, systemClock } from '../../src/clock.js';
import { GatewayError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { runCliInProcess, type CliRun } from '../helpers/cli.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import { tempDir } from '../helpers/files.js';

let dir: string;
let cleanup: () => Promise<void>;
let configPath: string;
const clock = new ManualClock(Date.parse('2024-06-01T00:00:00.000Z'));

function cli(args: string[], env: NodeJS.ProcessEnv = {}, programConfigOption = false): Promise<CliRun> {
  return runCliInProcess(args, { env, clock, programConfigOption });
}

async function writeConfig(extra = ''): Promise<void> {
  await writeFile(
    configPath,
    `agents:\n  support: { upstream: http://127.0.0.1:9/api/v1 }\n  sales: { upstream: http://127.0.0.1:9/api/v1 }\nkeys:\n  file: ${join(dir, 'var', 'keys.json')}\n${extra}`,
  );
}

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  configPath = join(dir, 'gateway.yaml');
  await writeConfig();
});
afterEach(async () => {
  await cleanup();
});

describe('keys CLI (file store)', () => {
  it('create prints the raw key once on the first line; list/show/revoke never print it or the hash', async () => {
    const created = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support', '--agent', 'sales', '--name', 'ci bot', '--expires-in', '30d']);
    expect(created.code).toBe(0);
    const lines = created.stdout.split('\n');
    const rawKey = lines[0]!;
    expect(parseApiKey(rawKey)).toBe(true);
    expect(created.stdout).toMatch(/key_id +key_[0-9A-Za-z]{16}/);
    expect(created.stdout).toContain('expires_at   2024-07-01T00:00:00.000Z');
    expect(created.stdout).not.toContain(hashApiKey(rawKey));
    expect(created.stderr).toMatch(/shown only this once/);
    const keyId = /key_[0-9A-Za-z]{16}/.exec(created.stdout)![0];

    const hash = hashApiKey(rawKey);
    const stored = await readFile(join(dir, 'var', 'keys.json'), 'utf8');
    expect(stored).toContain(hash);
    expect(stored).not.toContain(rawKey);

    for (const args of [
      ['keys', 'list', '--config', configPath],
      ['keys', 'list', '--config', configPath, '--json'],
      ['keys', 'list', '--config', configPath, '--account', 'acme'],
      ['keys', 'show', keyId, '--config', configPath],
      ['keys', 'show', keyId, '--config', configPath, '--json'],
    ]) {
      const out = await cli(args);
      expect(out.code).toBe(0);
      expect(out.stdout).toContain(keyId);
      expect(out.stdout).not.toContain(hash);
      expect(out.stdout).not.toContain(rawKey);
      expect(out.stdout).not.toContain(rawKey.slice(3, 35));
    }

    const listed = JSON.parse((await cli(['keys', 'list', '--config', configPath, '--json'])).stdout);
    expect(listed).toEqual([
      {
        key_id: keyId,
        account: 'acme',
        plan: 'pro',
        agents: ['support', 'sales'],
        name: 'ci bot',
        created_at: '2024-06-01T00:00:00.000Z',
        expires_at: '2024-07-01T00:00:00.000Z',
        revoked_at: null,
        last_used_at: null,
        metadata: {},
        limits: null,
        tools: null,
        replaces: null,
        replaced_by: null,
        status: 'active',
      },
    ]);
    expect((await cli(['keys', 'list', '--config', configPath, '--account', 'other'])).stdout).toBe('no keys for account other\n');
    const table = (await cli(['keys', 'list', '--config', configPath])).stdout.split('\n');
    expect(table[0]).toMatch(/^KEY_ID +STATUS +ACCOUNT +PLAN +AGENTS +EXPIRES_AT +LAST_USED_AT +NAME$/);
    expect(table[1]).toMatch(new RegExp(`^${keyId} +active +acme +pro +support,sales `));

    clock.advance(60_000);
    const revoked = await cli(['keys', 'revoke', keyId, '--config', configPath]);
    expect(revoked).toEqual({ code: 0, stdout: `revoked ${keyId} at 2024-06-01T00:01:00.000Z\n`, stderr: '' });
    expect((await cli(['keys', 'revoke', keyId, '--config', configPath])).stdout).toBe(`${keyId} was already revoked at 2024-06-01T00:01:00.000Z\n`);
    const shown = JSON.parse((await cli(['keys', 'show', keyId, '--config', configPath, '--json'])).stdout);
    expect(shown).toMatchObject({ key_id: keyId, status: 'revoked', revoked_at: '2024-06-01T00:01:00.000Z' });
    expect(shown).not.toHaveProperty('hash');
  });

  it('create --json prints one object with key, key_id and the record fields (no hash)', async () => {
    const out = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'starter', '--agent', 'support', '--json']);
    expect(out.code).toBe(0);
    expect(out.stdout.trim().split('\n')).toHaveLength(1);
    const body = JSON.parse(out.stdout);
    expect(Object.keys(body).sort()).toEqual(['account', 'agents', 'created_at', 'expires_at', 'key', 'key_id', 'last_used_at', 'limits', 'metadata', 'name', 'plan', 'replaced_by', 'replaces', 'revoked_at', 'status', 'tools']);
    expect(parseApiKey(body.key)).toBe(true);
    expect(out.stdout).not.toContain(hashApiKey(body.key));
    expect(out.stderr).toBe('');
  });

  it('--tool sets the tool scope on create; update --tool replaces it, --no-tools removes it; hostile scopes are refused, nothing written', async () => {
    const created = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support', '--tool', 'search', '--tool', 'web_search', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const body = JSON.parse(created.stdout) as { key_id: string; tools: string[] | null };
    expect(body.tools).toEqual(['search', 'web_search']);
    const shown = await cli(['keys', 'show', body.key_id, '--config', configPath]);
    expect(shown.stdout).toMatch(/^tools\s+search, web_search$/m);
    const replaced = await cli(['keys', 'update', body.key_id, '--config', configPath, '--tool', 'files', '--json']);
    expect(JSON.parse(replaced.stdout)).toMatchObject({ tools: ['files'], changed: ['tools'] });
    const cleared = await cli(['keys', 'update', body.key_id, '--config', configPath, '--no-tools', '--json']);
    expect(JSON.parse(cleared.stdout)).toMatchObject({ tools: null, changed: ['tools'] });
    expect((await cli(['keys', 'show', body.key_id, '--config', configPath])).stdout).not.toMatch(/^tools/m);
    const fileBefore = await readFile(join(dir, 'var', 'keys.json'), 'utf8');
    for (const [args, message] of [
      [['keys', 'update', body.key_id, '--tool', 'a', '--no-tools'], /--tool or --no-tools, not both/],
      [['keys', 'update', body.key_id, '--tool', 'a', '--tool', 'a'], /tools\[1\]: "a" is listed twice/],
      [['keys', 'update', body.key_id, '--tool', 'web search'], /tools\[0\]: a tool name is 1–64 characters/],
      [['keys', 'create', '--account', 'acme', '--plan', 'pro', '--agent', 'support', ...Array.from({ length: 65 }, (_, i) => ['--tool', `t${i}`]).flat()], /tools holds at most 64 names/],
    ] as [string[], RegExp][]) {
      const out = await cli([...args, '--config', configPath]);
      expect(out.code, args.join(' ')).toBe(1);
      expect(out.stderr).toMatch(message);
    }
    expect(await readFile(join(dir, 'var', 'keys.json'), 'utf8')).toBe(fileBefore);
  });

  it('reports errors on stderr with exit status 1', async () => {
    const cases: [string[], RegExp][] = [
      [['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'gold', '--agent', 'support'], /unknown plan "gold"/],
      [['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'nope'], /unknown agent\(s\) "nope"/],
      [['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro'], /required option '--agent <agent>' not specified/],
      [['keys', 'create', '--config', configPath, '--account', 'bad account', '--plan', 'pro', '--agent', 'support'], /account "bad account" is not valid/],
      [['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support', '--expires-in', '30'], /--expires-in "30"/],
      [['keys', 'show', 'key_0000000000000000', '--config', configPath], /no key key_0000000000000000/],
      [['keys', 'revoke', 'key_0000000000000000', '--config', configPath], /no key key_0000000000000000/],
      [['keys', 'list', '--config', join(dir, 'missing.yaml')], /no config file at/],
    ];
    for (const [args, message] of cases) {
      const out = await cli(args);
      expect(out.code, args.join(' ')).toBe(1);
      expect(out.stderr).toMatch(message);
      expect(out.stdout).toBe('');
    }
    const missing = await cli(['keys', 'create', '--config', configPath, '--plan', 'pro', '--agent', 'support']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/--account/);
  });

  it('refuses to work on a corrupt key file instead of showing an empty list', async () => {
    await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support']);
    await writeFile(join(dir, 'var', 'keys.json'), '{ not json');
    const out = await cli(['keys', 'list', '--config', configPath]);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/not valid JSON/);
  });

  it('honours a --config given to the parent program', async () => {
    const out = await cli(['--config', configPath, 'keys', 'list'], {}, true);
    expect(out).toEqual({ code: 0, stdout: 'no keys\n', stderr: '' });
  });

  it('a revoke by the CLI reaches a running gateway (file watch); a key the CLI creates works on the first try', async () => {
    const created = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support']);
    const rawKey = created.stdout.split('\n')[0]!;
    const keyId = /key_[0-9A-Za-z]{16}/.exec(created.stdout)![0];
    const store = await FileKeyStore.open({ path: join(dir, 'var', 'keys.json'), logger: silentLogger, watch: true });
    const throttle = new FailedAuthThrottle({ maxAttempts: 100, perMs: 60_000, blockForMs: 60_000, clock: systemClock, logger: silentLogger });
    const auth = new KeyAuthenticator({ store, clock: systemClock, logger: silentLogger, cacheTtlMs: 30_000, negativeCacheTtlMs: 5_000, throttle });
    try {
      const req = { authorization: `Bearer ${rawKey}`, agentId: 'support', clientIp: '127.0.0.1' };
      await expect(auth.authenticate(req)).resolves.toMatchObject({ keyId });
      expect((await cli(['keys', 'revoke', keyId, '--config', configPath])).code).toBe(0);
      // The watch or the poll, however late a loaded machine runs them (a revoked key's cache entry lives until then).
      await waitFor('the revocation to reach the authenticator', async () => (await auth.authenticate(req).then(() => '', (e: GatewayError) => e.type)) === 'revoked_api_key', 30_000, 10);
      // A key the CLI has just written works on the very first request, with no wait: the
      // store looks at the file on an unknown key (docs/keys.md).
      const second = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support']);
      const secondKey = second.stdout.split('\n')[0]!;
      const secondId = /key_[0-9A-Za-z]{16}/.exec(second.stdout)![0];
      await expect(auth.authenticate({ ...req, authorization: `Bearer ${secondKey}` })).resolves.toMatchObject({ keyId: secondId });
    } finally {
      await auth.close();
      await store.close();
    }
  });
});

describe('keys CLI (redis store)', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.close();
  });

  it('creates, lists, shows and revokes keys in Redis when keys.store is redis', async () => {
    await writeConfig('  store: redis\nredis:\n  prefix: "clitest:"\n');
    const env = { REDIS_URL: redis.url };
    const created = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support', '--json'], env);
    expect(created.code).toBe(0);
    const { key, key_id: keyId } = JSON.parse(created.stdout);
    const listed = await cli(['keys', 'list', '--config', configPath, '--json'], env);
    expect(JSON.parse(listed.stdout).map((k: { key_id: string }) => k.key_id)).toContain(keyId);
    expect(listed.stdout).not.toContain(hashApiKey(key));
    expect((await cli(['keys', 'revoke', keyId, '--config', configPath], env)).code).toBe(0);
    expect(JSON.parse((await cli(['keys', 'show', keyId, '--config', configPath, '--json'], env)).stdout).status).toBe('revoked');
  });

  it('list pages with --limit and --cursor, streams every page with --all, and searches by name prefix', async () => {
    await writeConfig('  store: redis\nredis:\n  prefix: "clipages:"\n');
    const env = { REDIS_URL: redis.url };
    const ids: string[] = [];
    for (const name of ['CI one', 'ci two', 'deploy', 'Ci three', 'other']) {
      clock.advance(1_000);
      const created = await cli(['keys', 'create', '--config', configPath, '--account', 'pages', '--plan', 'pro', '--agent', 'support', '--name', name, '--json'], env);
      ids.push(JSON.parse(created.stdout).key_id);
    }
    const idsOf = (stdout: string) => (JSON.parse(stdout) as { key_id: string }[]).map((k) => k.key_id);
    const first = await cli(['keys', 'list', '--config', configPath, '--account', 'pages', '--limit', '2', '--json'], env);
    expect(idsOf(first.stdout)).toEqual(ids.slice(0, 2));
    const cursor = /--cursor (\S+)/.exec(first.stderr)![1]!;
    const second = await cli(['keys', 'list', '--config', configPath, '--account', 'pages', '--limit', '2', '--cursor', cursor, '--json'], env);
    expect(idsOf(second.stdout)).toEqual(ids.slice(2, 4));
    const all = await cli(['keys', 'list', '--config', configPath, '--account', 'pages', '--limit', '2', '--all', '--json'], env);
    expect(idsOf(all.stdout)).toEqual(ids);
    expect(all.stderr).toBe('');
    const table = await cli(['keys', 'list', '--config', configPath, '--account', 'pages', '--limit', '2', '--all'], env);
    expect(table.stdout.split('\n').filter((line) => line.startsWith('KEY_ID'))).toHaveLength(1);
    expect(table.stdout.split('\n').filter((line) => line.startsWith('key_'))).toHaveLength(5);
    const search = await cli(['keys', 'list', '--config', configPath, '--name-prefix', 'ci', '--all', '--json'], env);
    expect(idsOf(search.stdout)).toEqual([ids[0], ids[1], ids[3]]);
    for (const bad of [['--status', 'gone'], ['--limit', '0'], ['--cursor', 'forged']]) {
      const refused = await cli(['keys', 'list', '--config', configPath, ...bad], env);
      expect(refused.code, bad.join(' ')).toBe(1);
    }
  });

  it('fails with a clear message when Redis cannot be reached', async () => {
    await writeConfig('  store: redis\nredis:\n  url: redis://127.0.0.1:1/0\n');
    const out = await cli(['keys', 'list', '--config', configPath]);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/cannot reach redis at redis:\/\/127\.0\.0\.1:1\/0/);
  }, 15_000);
});
