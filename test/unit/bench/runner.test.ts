// bench/ is its runner (docs/performance.md, "Measurements outside the suite"): every
// measurement run.mjs names is a module of bench/scenarios with its flags and a run function,
// `--help` lists them all, and bench/ holds no script of its own beside run.mjs but the one
// tool the docs name (count-instructions.mjs). Nothing is measured here.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runNodeScript } from '../../helpers/run-node-script.js';

interface Measurement {
  USAGE: unknown;
  run: unknown;
}

const BENCH = join(process.cwd(), 'bench');
const { MEASUREMENTS } = (await import(pathToFileURL(join(BENCH, 'lib/measurements.mjs')).href)) as { MEASUREMENTS: Record<string, string> };
const names = Object.keys(MEASUREMENTS);

describe('bench/run.mjs', () => {
  it.each(names)('%s is a module of bench/scenarios with its usage and a run function', async (name) => {
    const measurement = (await import(pathToFileURL(join(BENCH, 'scenarios', `${name}.mjs`)).href)) as Measurement;
    expect(typeof measurement.run).toBe('function');
    expect(String(measurement.USAGE)).toMatch(new RegExp(`^node bench/run\\.mjs ${name}\\b`));
  });

  it('--help lists the suite flags and every measurement', async () => {
    const { code, output } = await runNodeScript('bench/run.mjs', ['--help'], process.env);
    expect(code, output).toBe(0);
    expect(output).toContain('--scenarios');
    for (const name of names) expect(output).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
  });

  it('NAME --help prints that measurement’s flags and runs nothing', async () => {
    const { code, output } = await runNodeScript('bench/run.mjs', ['limit-commands', '--help'], process.env);
    expect(code, output).toBe(0);
    expect(output).toMatch(/^node bench\/run\.mjs limit-commands .*\n[\s\S]*--requests N/);
  });

  it('refuses an unknown measurement with exit code 2 and the list', async () => {
    const { code, output } = await runNodeScript('bench/run.mjs', ['no-such-measurement'], process.env);
    expect(code).toBe(2);
    expect(output).toContain('unknown measurement "no-such-measurement"');
    expect(output).toContain('compare-builds');
  });

  it('bench/ holds no script beside run.mjs but the named tool count-instructions.mjs', () => {
    const scripts = readdirSync(BENCH).filter((file) => /\.(mjs|js|cjs|ts|sh|lua)$/.test(file));
    expect(scripts.sort()).toEqual(['count-instructions.mjs', 'run.mjs']);
  });

  it('every module of bench/scenarios is a suite scenario run.mjs imports or a named measurement', () => {
    const imported = [...readFileSync(join(BENCH, 'run.mjs'), 'utf8').matchAll(/from '\.\/scenarios\/([\w-]+)\.mjs'/g)].map((m) => m[1]!);
    const modules = readdirSync(join(BENCH, 'scenarios')).map((file) => file.replace(/\.mjs$/, ''));
    expect(modules.filter((name) => !imported.includes(name) && !names.includes(name))).toEqual([]);
  });
});
