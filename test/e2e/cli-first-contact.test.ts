// A new user's first minutes with the CLI, as the built bin answers them: a checkout not built
// yet, an unsupported Node, a mistyped option, a missing config file, a config without agents,
// a raw key pasted where a key id belongs. Each gets one clear line saying what to do, and a
// raw key is never written back.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECOMMENDED_NODE_LINE, unsupportedNodeMessage } from '../../scripts/node-guard.mjs';
import { trackChildProcess } from '../helpers/child-processes.js';

const ROOT = process.cwd();
const SHIM = join(ROOT, 'bin/agent-gateway.mjs');
const ENGINES = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(node: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = trackChildProcess(
      execFile(node, args, { cwd, timeout: 60_000, env: { ...process.env, REDIS_URL: '' } }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
      }),
    );
    child.stdin?.end();
  });
}

const cli = (args: string[], cwd: string): Promise<Run> => run(process.execPath, [SHIM, ...args], cwd);
const lines = (text: string): string[] => text.trimEnd().split('\n');

let work: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'agentgw-first-contact-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('a checkout before its first build', { timeout: 120_000 }, () => {
  let checkout: string;

  beforeAll(() => {
    // What a fresh clone has of the bin: the shim, the guard, package.json; no dist/.
    checkout = join(work, 'clone');
    mkdirSync(join(checkout, 'scripts'), { recursive: true });
    cpSync(join(ROOT, 'bin'), join(checkout, 'bin'), { recursive: true });
    cpSync(join(ROOT, 'scripts/node-guard.mjs'), join(checkout, 'scripts/node-guard.mjs'));
    cpSync(join(ROOT, 'package.json'), join(checkout, 'package.json'));
  });

  it('says in one line to build first, not a "Cannot find module" stack', async () => {
    const { code, stdout, stderr } = await run(process.execPath, ['bin/agent-gateway.mjs', 'keys', 'list'], checkout);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(lines(stderr)).toEqual(['agent-gateway: the CLI is not built yet (no dist/cli/main.js): run `npm run build` (or `npm start`, which builds first), then this again.']);
  });

  it('on an unsupported Node (20) says that in one line first, recommending the line the image runs', async () => {
    // The machine's Debian node when it is an unsupported one, else a real node told it is v20.20.2.
    const machineNode = '/usr/bin/node';
    let node = machineNode;
    let prefix: string[] = [];
    const machineVersion = existsSync(machineNode) ? await run(machineNode, ['--version'], work).then((r) => r.stdout.trim()) : '';
    if (machineVersion === '' || unsupportedNodeMessage(machineVersion, ENGINES) === null) {
      const fake = join(work, 'fake-v20.mjs');
      writeFileSync(fake, "Object.defineProperty(process.versions, 'node', { value: '20.20.2' });\n");
      node = process.execPath;
      prefix = ['--import', fake];
    }
    const { code, stdout, stderr } = await run(node, [...prefix, 'bin/agent-gateway.mjs', 'keys', 'list'], checkout);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(lines(stderr)).toHaveLength(1);
    expect(stderr).toMatch(/^agent-gateway: Node\.js v20\.\d+\.\d+ is not supported; .*`nvm install 24`/);
  });

  it('recommends the Node line of the Docker image', () => {
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toMatch(new RegExp(`^FROM node:${RECOMMENDED_NODE_LINE}-`, 'm'));
    expect(unsupportedNodeMessage('20.20.2', ENGINES)).toContain(`\`nvm install ${RECOMMENDED_NODE_LINE}\``);
  });
});

// Each case starts the CLI a few times: generous for a loaded machine.
describe('the built CLI through its bin', { timeout: 240_000 }, () => {
  let dir: string;
  let config: string;

  beforeAll(() => {
    dir = join(work, 'built');
    mkdirSync(dir, { recursive: true });
    config = join(dir, 'gateway.yaml');
    writeFileSync(config, `agents:\n  demo: { upstream: http://127.0.0.1:9/api/v1 }\nkeys:\n  file: ${join(dir, 'keys.json')}\n`);
  });

  it('runs the CLI once built', async () => {
    const { code, stdout } = await cli(['--version'], dir);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });

  it('names a mistyped option and the one meant, before any missing required option', async () => {
    const { code, stderr } = await cli(['keys', 'create', '--acount', 'acme', '--plan', 'pro', '--agent', 'demo', '--config', config], dir);
    expect(code).toBe(1);
    expect(stderr).toContain("unknown option '--acount'");
    expect(stderr).toContain('(Did you mean --account?)');
    expect(stderr).not.toContain('required option');
    // Nothing was written.
    expect(existsSync(join(dir, 'keys.json'))).toBe(false);
    // An option no name is near gets no suggestion; a known one with = still works.
    const far = await cli(['keys', 'list', '--zzzzzzzz', '--config', config], dir);
    expect(far.stderr).toContain("unknown option '--zzzzzzzz'");
    expect(far.stderr).not.toContain('Did you mean');
    expect((await cli(['keys', 'list', `--config=${config}`], dir)).stdout).toBe('no keys\n');
  });

  it('says in one line that the config file is missing, without an errno', async () => {
    const missing = join(dir, 'nope.yaml');
    const { code, stdout, stderr } = await cli(['keys', 'list', '--config', missing], dir);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(lines(stderr)).toEqual([`agent-gateway keys list: no config file at ${missing}: pass --config PATH, or run from the checkout's root, where config/gateway.yaml is (docs/configuration.md)`]);
  });

  it('says what a config without agents lacks, in words, not zod\'s', async () => {
    const empty = join(dir, 'no-agents.yaml');
    writeFileSync(empty, 'server:\n  port: 0\n');
    const { code, stderr } = await cli(['config', 'check', '--config', empty], dir);
    expect(code).toBe(1);
    expect(stderr).toContain('agents: missing: name the agents this gateway serves, e.g. "agents: { demo: { upstream: http://127.0.0.1:8081/api/v1 } }"');
    expect(stderr).not.toContain('expected record');
  });

  it('takes a pasted raw key for what it is, and never prints it back', async () => {
    const created = await cli(['keys', 'create', '--account', 'acme', '--plan', 'pro', '--agent', 'demo', '--config', config], dir);
    expect(created.code).toBe(0);
    const rawKey = lines(created.stdout)[0]!;
    expect(rawKey).toMatch(/^ha_/);
    for (const command of [['keys', 'show'], ['keys', 'revoke'], ['keys', 'update'], ['keys', 'rotate']]) {
      const args = command[1] === 'update' ? [...command, rawKey, '--plan', 'pro'] : [...command, rawKey];
      const { code, stdout, stderr } = await cli([...args, '--config', config], dir);
      expect(code, command.join(' ')).toBe(1);
      expect(stderr, command.join(' ')).toContain('that is an API key (ha_…), not a key id: pass its key_id');
      for (const text of [stdout, stderr]) {
        expect(text).not.toContain(rawKey);
        expect(text).not.toContain(rawKey.slice(3));
      }
    }
    // The key still works as it was: nothing was revoked or changed.
    expect((await cli(['keys', 'list', '--config', config, '--json'], dir)).stdout).toContain('"status":"active"');
  });
});

