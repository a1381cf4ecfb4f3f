import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// Runs the same checker and rule file as `npm run lint:deps`, so a violation in src/
// fails `npm test` (and CI), not only whoever remembers to run the lint.
const repoRoot = resolve(import.meta.dirname, '../..');
const checker = join(repoRoot, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const ruleFile = join(repoRoot, '.dependency-cruiser.cjs');
const fixtureRoot = join(repoRoot, 'test/fixtures/layering');

interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
}
interface CruiseResult {
  modules: { source: string }[];
  summary: { violations: Violation[]; error: number };
}

function cruise(cwd: string): CruiseResult {
  const run = spawnSync(process.execPath, [checker, 'src', '--config', ruleFile, '--output-type', 'json'], { cwd, encoding: 'utf8' });
  expect(run.stdout, run.stderr).not.toBe('');
  return JSON.parse(run.stdout) as CruiseResult;
}

const typeScriptFilesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join('src', name).split('\\').join('/'))
    .sort();

describe('dependency rules (.dependency-cruiser.cjs)', () => {
  it('src/ has no import cycle, no upward import, and no other violation', () => {
    const result = cruise(repoRoot);
    const cruised = result.modules.map((module) => module.source).filter((source) => source.startsWith('src/'));
    // Every source file was read: a check that cruised nothing would also find nothing.
    expect(cruised.sort()).toEqual(typeScriptFilesUnder(join(repoRoot, 'src')));
    expect(result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
  });

  it('catches each kind of violation planted in test/fixtures/layering, and nothing it allows', () => {
    const result = cruise(fixtureRoot);
    expect(result.modules.map((module) => module.source).filter((source) => source.startsWith('src/')).sort()).toEqual(
      typeScriptFilesUnder(join(fixtureRoot, 'src')),
    );
    const found = result.summary.violations
      .map((v) => `${v.rule.name}: ${v.from} -> ${v.to.replace(/^.*node_modules\/ioredis\/.*$/, 'ioredis')}`)
      .sort();
    expect(found).toEqual(
      [
        'no-circular: src/proxy/ping.ts -> src/proxy/pong.ts',
        'layer-config: src/config/settings.ts -> src/http/handler.ts',
        'layer-keys: src/keys/key-list.ts -> src/audit/audit-entry.ts',
        'layer-ratelimit: src/ratelimit/limit-check.ts -> src/request/route.ts',
        'demo-agent-standalone: src/demo-agent/agent.ts -> src/config/settings.ts',
        'demo-agent-only-from-cli: src/admin/status.ts -> src/demo-agent/agent.ts',
        'file-outside-the-order: src/stray/orphan.ts -> src/errors.ts',
        'import-outside-the-order: src/admin/status.ts -> src/stray/orphan.ts',
        'ratelimit-implementations-only-from-the-composition-root: src/http/limits.ts -> src/ratelimit/memory-rate-limiter.ts',
        'ioredis-only-in-redis-files: src/metrics/counter.ts -> ioredis',
      ].sort(),
    );
    expect(result.summary.violations.every((v) => v.rule.severity === 'error')).toBe(true);
  });
});
