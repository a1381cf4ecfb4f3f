// CLI parity with the admin API (docs/admin-api.md "CLI"): keys update, keys rotate, keys
// create --limits/--metadata, usage (table and JSON, from the rollups), audit tail --admin —
// each through commander in process against a temp config on the key file.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AdminAuditLog } from '../../src/audit/admin-audit-log.js';
import { toAuditLine, type AuditRecord } from '../../src/audit/audit-record.js';
import { FileUsageRollup } from '../../src/audit/file-usage-rollup.js';
import { openAdminAuditBatches } from '../../src/audit/open-audit-log.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load-config.js';
import { parseApiKey } from '../../src/keys/key-format.js';
import { silentLogger } from '../../src/logger.js';
import { runCliInProcess, type CliRun } from '../helpers/cli.js';

let dir: string;
let configPath: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-admin-cli-'));
  configPath = join(dir, 'gateway.yaml');
  await writeFile(
    configPath,
    [
      'agents:',
      '  support: { upstream: http://127.0.0.1:9/api/v1 }',
      '  sales: { upstream: http://127.0.0.1:9/api/v1 }',
      `keys: { file: ${join(dir, 'keys.json')} }`,
      `audit: { file: ${join(dir, 'audit.jsonl')}, spool: ${join(dir, 'spool.jsonl')}, usage_dir: ${join(dir, 'usage')}, admin_file: ${join(dir, 'admin-audit.jsonl')} }`,
      '',
    ].join('\n'),
  );
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function cli(args: string[]): Promise<CliRun> {
  return runCliInProcess(args);
}

async function createJson(...extra: string[]): Promise<Record<string, unknown>> {
  const created = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support', '--json', ...extra]);
  expect(created.code, created.stderr).toBe(0);
  return JSON.parse(created.stdout) as Record<string, unknown>;
}

describe('keys CLI: create --limits/--metadata, update, rotate', () => {
  it('creates with limits and metadata, refusing bad limits with the field named', async () => {
    const created = await createJson('--limits', '{"windows":[{"requests":10,"per":"1m"}]}', '--metadata', 'team=search', '--metadata', 'env=prod');
    expect(created).toMatchObject({ limits: { windows: [{ requests: 10, per: '1m' }] }, metadata: { team: 'search', env: 'prod' } });
    const bad = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support', '--limits', '{"windows":[{"requests":0,"per":"1m"}]}']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/limits\.windows\[0\]\.requests/);
    const capped = await createJson('--limits', '{"concurrency":{"streams":2,"lease":"10s"}}');
    expect(capped).toMatchObject({ limits: { concurrency: { streams: 2, lease: '10s' } } });
    const shortLease = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support', '--limits', '{"concurrency":{"streams":2,"lease":"100ms"}}']);
    expect(shortLease.code).toBe(1);
    expect(shortLease.stderr).toMatch(/limits\.concurrency\.lease/);
    const notJson = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support', '--limits', 'lots']);
    expect([notJson.code, notJson.stderr]).toEqual([1, expect.stringMatching(/--limits "lots": expected a JSON object/)]);
  });

  it('updates only the options given, says what changed, and refuses an unknown plan without writing', async () => {
    const created = await createJson('--name', 'before');
    const id = created.key_id as string;
    const updated = await cli(['keys', 'update', id, '--config', configPath, '--plan', 'starter', '--agent', 'sales', '--expires-at', '2099-01-01T00:00:00Z', '--metadata', 'a=b']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toMatch(/^updated plan, agents, expires_at, metadata\n/);
    const shown = JSON.parse((await cli(['keys', 'show', id, '--config', configPath, '--json'])).stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ name: 'before', plan: 'starter', agents: ['sales'], expires_at: '2099-01-01T00:00:00.000Z', metadata: { a: 'b' } });
    expect((await cli(['keys', 'update', id, '--config', configPath, '--expires-at', 'never', '--json'])).stdout).toContain('"changed":["expires_at"]');
    const refused = await cli(['keys', 'update', id, '--config', configPath, '--plan', 'gold', '--name', 'after']);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/unknown plan "gold"/)]);
    expect(JSON.parse((await cli(['keys', 'show', id, '--config', configPath, '--json'])).stdout)).toMatchObject({ name: 'before', plan: 'starter', expires_at: null });
    const unchanged = await cli(['keys', 'update', id, '--config', configPath, '--name', 'before']);
    expect(unchanged.stdout).toMatch(/^nothing changed\n/);
  });

  it('rotates: prints the new key once, the old key names its replacement and expires at the grace end', async () => {
    const created = await createJson();
    const rotated = await cli(['keys', 'rotate', created.key_id as string, '--config', configPath, '--grace', '2h']);
    expect(rotated.code, rotated.stderr).toBe(0);
    const newKey = rotated.stdout.split('\n')[0]!;
    expect(parseApiKey(newKey)).toBe(true);
    expect(newKey).not.toBe(created.key);
    expect(rotated.stderr).toMatch(/shown only this once/);
    const newId = /key_id +(key_[0-9A-Za-z]{16})/.exec(rotated.stdout)![1]!;
    const old = JSON.parse((await cli(['keys', 'show', created.key_id as string, '--config', configPath, '--json'])).stdout) as Record<string, string>;
    expect(old.replaced_by).toBe(newId);
    expect(Date.parse(old.expires_at!) - Date.now()).toBeGreaterThan(2 * 3_600_000 - 60_000);
    expect(Date.parse(old.expires_at!) - Date.now()).toBeLessThanOrEqual(2 * 3_600_000);
    const again = await cli(['keys', 'rotate', created.key_id as string, '--config', configPath]);
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/already rotated/)]);
  });
});

describe('keys CLI writes in the admin audit trail', () => {
  const adminTrail = async () => (await readFile(join(dir, 'admin-audit.jsonl'), 'utf8').catch(() => '')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);

  it('records create, update, revoke and rotate as cli:<os user>, in the admin API\'s record shape, and nothing for reads or no-ops', async () => {
    const created = await createJson('--name', 'n', '--expires-in', '30d', '--metadata', 'team=a');
    const id = created.key_id as string;
    expect((await cli(['keys', 'list', '--config', configPath])).code).toBe(0);
    expect((await cli(['keys', 'show', id, '--config', configPath])).code).toBe(0);
    expect((await cli(['keys', 'update', id, '--config', configPath, '--plan', 'starter'])).code).toBe(0);
    expect((await cli(['keys', 'update', id, '--config', configPath, '--plan', 'starter'])).stdout).toMatch(/^nothing changed/);
    const rotated = await cli(['keys', 'rotate', id, '--config', configPath, '--grace', '1h', '--json']);
    const newId = (JSON.parse(rotated.stdout) as { key_id: string }).key_id;
    expect((await cli(['keys', 'revoke', newId, '--config', configPath])).code).toBe(0);
    expect((await cli(['keys', 'revoke', newId, '--config', configPath])).stdout).toMatch(/already revoked/);

    const trail = await adminTrail();
    const actor = `cli:${userInfo().username}`;
    expect(trail.map((r) => [r.action, r.key_id, r.changed, r.actor])).toEqual([
      ['key.create', id, ['account', 'agents', 'expires_in', 'metadata', 'name', 'plan'], actor],
      ['key.update', id, ['plan'], actor],
      ['key.rotate', id, ['expires_at', 'replaced_by'], actor],
      ['key.revoke', newId, ['revoked_at'], actor],
    ]);
    // The documented record (docs/admin-api.md "Admin audit trail"), each with its own ids.
    for (const r of trail) {
      expect(Object.keys(r).sort()).toEqual(['action', 'actor', 'changed', 'id', 'key_id', 'request_id', 'ts', ...(r.action === 'key.rotate' ? ['new_key_id'] : [])].sort());
      expect(Number.isNaN(Date.parse(r.ts as string))).toBe(false);
    }
    expect(trail.find((r) => r.action === 'key.rotate')!.new_key_id).toBe(newId);
    expect(new Set(trail.map((r) => r.request_id)).size).toBe(trail.length);
    // Never a raw key or a hash.
    const text = await readFile(join(dir, 'admin-audit.jsonl'), 'utf8');
    expect(text).not.toContain(created.key as string);
    expect(text).not.toMatch(/ha_[0-9A-Za-z]{20}|[0-9a-f]{64}/);
  });

  it('a trail that cannot be written: the change is made and printed, the command says so and exits 1', async () => {
    // The trail's directory is a file: nothing can be appended below it.
    await writeFile(join(dir, 'blocked'), '');
    const blocked = (await readFile(configPath, 'utf8')).replace(`admin_file: ${join(dir, 'admin-audit.jsonl')}`, `admin_file: ${join(dir, 'blocked', 'admin-audit.jsonl')}`);
    await writeFile(configPath, blocked);
    const made = await cli(['keys', 'create', '--config', configPath, '--account', 'acme', '--plan', 'pro', '--agent', 'support']);
    expect(made.code).toBe(1);
    expect(made.stdout.split('\n')[0]).toMatch(/^ha_/);
    expect(made.stderr).toMatch(/agent-gateway keys create: the admin audit record could not be written \(admin-file: .*(ENOTDIR|EEXIST)/);
  });
});

function record(i: number, overrides: Partial<AuditRecord> = {}): AuditRecord {
  return {
    id: `r${i}`,
    request_id: `client-r${i}`,
    ts: new Date(Date.now() - 3_600_000).toISOString(),
    key_id: `key_${String(i % 2).padStart(16, '0')}`,
    account: 'acme',
    plan: 'pro',
    agent: i % 3 === 0 ? 'sales' : 'support',
    route: 'chat',
    status: 200,
    outcome: 'ok',
    tokens_used: 10,
    latency_ms: 20,
    upstream_latency_ms: 10,
    bytes_in: 1,
    bytes_out: 1,
    client_ip: '127.0.0.1',
    user_id: null,
    session_id: null,
    model: null,
    cost_usd: null,
    tool_calls: null,
    tools_withheld: null,
    ...overrides,
  };
}

describe('usage and audit tail --admin', () => {
  it('usage prints a table by default and the rows with --json, from the rollups', async () => {
    const rollup = new FileUsageRollup({ dir: join(dir, 'usage'), retentionMs: 90 * 86_400_000, logger: silentLogger });
    rollup.add([
      ...Array.from({ length: 6 }, (_, i) => toAuditLine(record(i, { cost_usd: 0.1, session_id: i < 2 ? 'run one' : 'run-2', tool_calls: i === 0 ? ['web_search', 'fetch'] : null }))),
      toAuditLine(record(6, { outcome: 'rate_limited', status: 429, tokens_used: null })),
    ]);
    await rollup.close();
    const json = await cli(['usage', '--config', configPath, '--by', 'account', '--since', '2d', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const rows = JSON.parse(json.stdout) as { group: string; requests: number; tokens: number; cost_usd: number; errors: Record<string, number> }[];
    expect(rows).toHaveLength(1);
    // Six records of $0.1: exactly 0.6 (summed in micro-dollars, not 0.6000000000000001).
    expect(rows[0]).toMatchObject({ group: 'acme', requests: 7, tokens: 60, cost_usd: 0.6, errors: { rate_limited: 1 } });
    const table = await cli(['usage', '--config', configPath, '--by', 'agent']);
    expect(table.stdout.split('\n')[0]).toMatch(/^AGENT +PERIOD +REQUESTS +TOKENS +COST_USD +TOOL_CALLS +ERRORS +P50_MS +P99_MS$/);
    expect(table.stdout).toMatch(/sales .* 3 +20 +0\.2 +\d +rate_limited=1 /);
    expect(table.stdout).toMatch(/support .* 4 +40 +0\.4 +\d +- /);
    // An account's agent runs, ranked by tool calls; a run id holding a space is quoted.
    const runs = await cli(['usage', '--config', configPath, '--by', 'session', '--account', 'acme', '--sort', 'tool_calls']);
    expect(runs.code, runs.stderr).toBe(0);
    const lines = runs.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^SESSION +PERIOD/);
    expect(lines[1]).toMatch(/^"run one" .* 2 +20 +0\.2 +2 +- /);
    expect(lines[2]).toMatch(/^run-2 .* 4 +40 +0\.4 +0 +- /);
    const unnamed = await cli(['usage', '--config', configPath, '--by', 'session']);
    expect([unnamed.code, unnamed.stderr]).toEqual([1, 'agent-gateway usage: --by session needs --key or --account: the runs of which key or account?\n']);
    const bad = await cli(['usage', '--config', configPath, '--by', 'plan']);
    expect(bad.code).toBe(1);
    const none = await cli(['usage', '--config', configPath, '--agent', 'nobody']);
    expect(none.stdout).toBe('no usage in this period\n');
  });

  it('audit tail --admin prints the admin trail, and --key filters it', async () => {
    const config = await loadConfig(configPath);
    const trail = new AdminAuditLog(openAdminAuditBatches(config, { logger: silentLogger, clock: systemClock }), systemClock);
    await trail.record({ request_id: 'r1', actor: 'ops', action: 'key.create', key_id: 'key_aaaaaaaaaaaaaaaa', changed: ['account'] });
    await trail.record({ request_id: 'r2', actor: 'ops', action: 'key.revoke', key_id: 'key_bbbbbbbbbbbbbbbb', changed: ['revoked_at'] });
    await trail.close();
    const all = await cli(['audit', 'tail', '--admin', '--config', configPath]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { action: string }).action)).toEqual(['key.create', 'key.revoke']);
    const one = await cli(['audit', 'tail', '--admin', '--key', 'key_bbbbbbbbbbbbbbbb', '--config', configPath]);
    expect(one.stdout.trim().split('\n')).toHaveLength(1);
    // Without --admin: the usage records (none here), not the trail.
    expect((await cli(['audit', 'tail', '--config', configPath])).stdout).toBe('');
  });
});
