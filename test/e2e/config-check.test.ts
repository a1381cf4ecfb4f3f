// `agent-gateway config check` reports every problem of a config in one run: an unknown key no
// longer hides the checks of the block it is in (or the checks across blocks), each unknown key
// comes with the nearest known one, and the TLS files the config names must exist and parse.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editDistance, knownKeysAt, nearestKey } from '../../src/config/config-keys.js';
import { configFileProblems } from '../../src/config/config-files.js';
import { configSchema } from '../../src/config/schema.js';
import { CLI_PATH } from '../helpers/cli.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls-certs.js';

let dir: string;
let certs: TestCertificates;
let otherCerts: TestCertificates;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-config-check-'));
  [certs, otherCerts] = await Promise.all([makeTestCertificates('localhost'), makeTestCertificates('localhost')]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await Promise.all([certs?.remove(), otherCerts?.remove()]);
});

async function configCheck(text: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const path = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(path, text);
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI_PATH, 'config', 'check', '--config', path], { env: { ...process.env, PORT: '', REDIS_URL: '' } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('config check', () => {
  it('reports all 7 mistakes of a config in one run, with "did you mean" for the unknown key', async () => {
    const garbageKey = join(dir, 'garbage.key');
    await writeFile(garbageKey, 'not a key\n');
    const text = [
      'listen:',
      '  port: 99999', // 1: out of range
      `  tls: { cert: ${join(dir, 'missing.pem')}, key: ${garbageKey} }`, // 2: no such file; 3: not a PEM key
      'keys:',
      '  store: redis', // 4: no redis block (a check across blocks, which any other problem used to hide)
      'stream:',
      '  heartbeat: 15', // 5: no unit
      'agents:',
      '  demo:',
      '    upstreams: [{ url: "http://127.0.0.1:8081/a" }, { url: "http://127.0.0.1:8081/b" }]', // 6: one origin twice (the agent's own check, hidden by 7 before)
      '    timout: 30s', // 7: unknown key
      '',
    ].join('\n');
    const { code, stdout, stderr } = await configCheck(text);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    const problems = stderr.split('\n').filter((line) => line.startsWith('  - '));
    expect(stderr).toContain('(7 problems)');
    expect(problems, stderr).toHaveLength(7);
    for (const expected of [
      /^ {2}- listen\.port: Too big/,
      new RegExp(`^ {2}- listen\\.tls\\.cert: cannot read ${join(dir, 'missing.pem')}: no such file$`),
      /^ {2}- listen\.tls\.key: .*garbage\.key is not a readable PEM private key/,
      /^ {2}- keys\.store: "redis" needs a redis block/,
      /^ {2}- stream\.heartbeat: expected a duration with a unit/,
      /^ {2}- agents\.demo\.upstreams\.1\.url: origin http:\/\/127\.0\.0\.1:8081 is listed twice$/,
      /^ {2}- agents\.demo: unknown key "timout" \(did you mean "timeout"\?\)$/,
    ]) {
      expect(problems.filter((line) => expected.test(line)), `${expected} in\n${stderr}`).toHaveLength(1);
    }
  }, 90_000);

  it('accepts a config whose TLS files exist and match, and refuses a certificate with another key or a garbage CA', async () => {
    const good = `listen: { tls: { cert: ${certs.serverCert}, key: ${certs.serverKey}, ca: ${certs.ca} } }\nagents: { demo: { upstream: "http://127.0.0.1:8081/api/v1" } }\n`;
    const ok = await configCheck(good);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/: ok \(agents: demo; plans: starter, pro, scale; mode: embedded\)\n$/);

    const garbageCa = join(dir, 'garbage-ca.pem');
    await writeFile(garbageCa, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    const bad = await configCheck(
      `listen: { tls: { cert: ${certs.serverCert}, key: ${otherCerts.serverKey} } }\n` +
        `agents: { demo: { upstream: "https://127.0.0.1:8443/api/v1", tls: { ca: ${garbageCa} } } }\n` +
        `redis: { url: "rediss://127.0.0.1:6380/0", tls: { ca: ${join(dir, 'no-ca.pem')} } }\n`,
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('listen.tls.cert: the certificate does not match the private key in listen.tls.key');
    expect(bad.stderr).toMatch(/agents\.demo\.tls\.ca: .*garbage-ca\.pem holds a certificate that does not parse/);
    expect(bad.stderr).toMatch(/redis\.tls\.ca: cannot read .*no-ca\.pem: no such file/);
  }, 90_000);

  it('checks the files even when the rest of the document is not a valid config', async () => {
    expect(await configFileProblems({ listen: { tls: { cert: join(dir, 'nope.pem'), key: 5 } }, agents: 'none' })).toEqual([`listen.tls.cert: cannot read ${join(dir, 'nope.pem')}: no such file`]);
    expect(await configFileProblems('not a mapping')).toEqual([]);
  });
});

describe('the nearest known key', () => {
  it('reads the known keys from the schema at any path, through records, lists and defaults', () => {
    expect(knownKeysAt(configSchema, [])).toEqual(expect.arrayContaining(['listen', 'admin', 'agents', 'shutdown_grace']));
    expect(knownKeysAt(configSchema, ['agents', 'any-agent'])).toEqual(expect.arrayContaining(['upstream', 'upstreams', 'timeout', 'tls']));
    expect(knownKeysAt(configSchema, ['agents', 'a', 'upstreams', 0])).toEqual(['url', 'weight']);
    expect(knownKeysAt(configSchema, ['redis', 'tls'])).toEqual(['ca', 'cert', 'key', 'servername']);
    expect(knownKeysAt(configSchema, ['shutdown_grace'])).toEqual([]);
    expect(knownKeysAt(configSchema, ['no_such_block'])).toEqual([]);
  });

  it('suggests a key one or two edits away (swaps count once; case and "-" ignored) and nothing for a stranger', () => {
    expect(editDistance('timout', 'timeout')).toBe(1);
    expect(editDistance('tiemout', 'timeout')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    const agentKeys = knownKeysAt(configSchema, ['agents', 'x']);
    expect(nearestKey('timout', agentKeys)).toBe('timeout');
    expect(nearestKey('max-tokens', agentKeys)).toBe('max_tokens');
    expect(nearestKey('Upstream', agentKeys)).toBe('upstream');
    expect(nearestKey('upstreems', agentKeys)).toBe('upstreams');
    expect(nearestKey('retries', agentKeys)).toBeUndefined();
    expect(nearestKey('ab', ['cd'])).toBeUndefined();
  });
});
