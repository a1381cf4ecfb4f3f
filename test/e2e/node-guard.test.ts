// An unsupported Node.js is refused at once, in one line that names the supported lines and
// how to get one, by every entry a user runs: the CLI (`npm start`'s entry), `npm start`,
// `npm test`'s build step, `npm run bench`, and vitest itself. The unsupported Node is the
// machine's own /usr/bin/node when it is one (Debian's Node 20), else a fake `node` first on
// PATH that reports v20.20.2 to the code it runs.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEngineRange, nodeVersionSatisfies, parseEngineRange, unsupportedNodeMessage } from '../../scripts/node-guard.mjs';
import { trackChildProcess } from '../helpers/child-processes.js';
import { freePort } from '../helpers/free-port.js';
import { CLI_PATH } from '../helpers/cli.js';

const ROOT = process.cwd();
const ENGINES = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
const REFUSAL = /^agent-gateway: Node\.js v\d+\.\d+\.\d+ is not supported; it runs on Node\.js .+ \(package\.json "engines"\)\. Get one with `nvm install \d+` or from https:\/\/nodejs\.org\/en\/download, then run this again\.$/;

describe('the Node.js version check (scripts/node-guard.mjs)', () => {
  it('reads the engines range of package.json and names its lines for people', () => {
    expect(parseEngineRange(ENGINES).length).toBeGreaterThan(0);
    expect(describeEngineRange('^22.13.0 || ^24.0.0 || ^26.0.0')).toBe('22 (>= 22.13), 24 or 26');
    expect(describeEngineRange('>=24.1.2')).toBe('24 or later (>= 24.1.2)');
    expect(() => parseEngineRange('~22.1.0')).toThrow(/cannot read the engines range part "~22.1.0"/);
  });

  it('accepts each supported line from its first release and refuses the rest', () => {
    const range = '^22.13.0 || ^24.0.0 || ^26.0.0';
    for (const ok of ['22.13.0', 'v22.23.3', '24.0.0', '24.11.1', '26.0.0']) expect(nodeVersionSatisfies(ok, range), ok).toBe(true);
    for (const bad of ['20.20.2', '22.12.9', '23.11.0', '25.0.0', '27.0.0', '18.0.0', 'garbage']) expect(nodeVersionSatisfies(bad, range), bad).toBe(false);
    expect(unsupportedNodeMessage('24.11.1', range)).toBeNull();
    expect(unsupportedNodeMessage('20.20.2', range)).toMatch(REFUSAL);
    // The Node running this test is a supported one.
    expect(unsupportedNodeMessage(process.versions.node, ENGINES)).toBeNull();
  });
});

describe('an unsupported Node.js is refused in one line', () => {
  let work: string;
  let binDir: string;
  let how: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'agentgw-node-guard-'));
    binDir = join(work, 'bin');
    mkdirSync(binDir);
    const machineNode = '/usr/bin/node';
    const machineVersion = existsSync(machineNode) ? execFileSync(machineNode, ['--version'], { encoding: 'utf8' }).trim() : '';
    if (machineVersion !== '' && unsupportedNodeMessage(machineVersion, ENGINES) !== null) {
      symlinkSync(machineNode, join(binDir, 'node'));
      how = `the machine's ${machineNode} ${machineVersion}`;
    } else {
      // A real node that tells the code it runs (and `node --version`) that it is v20.20.2.
      const fake = join(work, 'fake-v20.mjs');
      writeFileSync(fake, "Object.defineProperty(process.versions, 'node', { value: '20.20.2' });\nObject.defineProperty(process, 'version', { value: 'v20.20.2' });\n");
      const script = join(binDir, 'node');
      writeFileSync(script, `#!/bin/sh\ncase "$1" in --version|-v) echo v20.20.2; exit 0;; esac\nexec '${process.execPath}' --import '${fake}' "$@"\n`);
      chmodSync(script, 0o755);
      how = `a fake node reporting v20.20.2 (machine's node: ${machineVersion || 'none'})`;
    }
    process.stdout.write(`node-guard test: the unsupported Node is ${how}\n`);
    // If a check did not stop, nothing it starts may collide with anything else: free ports,
    // and a working directory of its own for the CLI.
    env = { ...process.env, PATH: `${binDir}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`, PORT: String(await freePort()), ADMIN_PORT: String(await freePort()), DEMO_AGENT_URL: `http://127.0.0.1:${await freePort()}/api/v1`, REDIS_URL: '' };
    mkdirSync(join(work, 'cwd', 'config'), { recursive: true });
    copyFileSync(join(ROOT, 'config/gateway.yaml'), join(work, 'cwd', 'config/gateway.yaml'));
  });

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** Runs `command` with the unsupported node first on PATH; kills it if it is still running after 60 s. */
  function run(command: string, args: string[], cwd = ROOT): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = trackChildProcess(spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }));
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.once('error', reject);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  function refusalLines(text: string): string[] {
    return text.split('\n').filter((line) => line.startsWith('agent-gateway: Node.js'));
  }

  it("`npm start`'s entry (node dist/cli/main.js serve --demo) exits 1 with the one line and nothing else", async () => {
    const { code, stdout, stderr } = await run('node', [CLI_PATH, 'serve', '--demo'], join(work, 'cwd'));
    expect(code, `${how}\n${stdout}${stderr}`).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trimEnd()).toMatch(REFUSAL);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    // It refused before doing anything: no key store, no demo admin token.
    expect(existsSync(join(work, 'cwd', 'var'))).toBe(false);
  }, 120_000);

  it('`npm start`, `npm test` (its build step) and `npm run bench` stop on the line, before building anything', async () => {
    // npm from PATH (the one beside this test's node, else the machine's), run by the unsupported node.
    for (const args of [['start'], ['run', 'pretest'], ['run', 'bench', '--', '--help']]) {
      const { code, stdout, stderr } = await run('npm', args);
      const all = stdout + stderr;
      expect(code, `npm ${args.join(' ')} (${how}):\n${all}`).not.toBe(0);
      expect(refusalLines(all), all).toHaveLength(1);
      expect(refusalLines(all)[0]).toMatch(REFUSAL);
      expect(all).not.toContain('building dist/');
    }
  }, 240_000);

  it('`node bench/run.mjs` and vitest (its config) stop on the line too', async () => {
    const bench = await run('node', ['bench/run.mjs', '--help']);
    expect(bench.code, bench.stdout + bench.stderr).toBe(1);
    expect(bench.stderr.trimEnd()).toMatch(REFUSAL);
    const vitest = await run('node', ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vitest.config.ts', 'test/unit/clock.test.ts']);
    const all = vitest.stdout + vitest.stderr;
    expect(vitest.code, all).not.toBe(0);
    expect(refusalLines(all), all).toHaveLength(1);
  }, 120_000);
});
