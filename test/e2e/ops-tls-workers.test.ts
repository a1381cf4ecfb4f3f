// `serve --workers 2` with `listen.tls`, the built CLI: both workers serve HTTPS (HTTP/1.1 and
// HTTP/2) on the one port, each picks up a replaced certificate by itself, SIGHUP makes
// every worker read the files again, and SIGTERM still ends the instance cleanly.
import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileKeyStore } from '../../src/keys/file-key-store.js';
import { KeyService } from '../../src/keys/key-service.js';
import { parseConfig } from '../../src/config/load-config.js';
import { silentLogger } from '../../src/logger.js';
import { spawnBuiltCli, type CliChild } from '../helpers/cli.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { freePort } from '../helpers/free-port.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/tls-certs.js';
import { clientTls, http2Post, httpsPost, openHttp2, servedFingerprint, fingerprintOf, replaceFile, type ClientTls } from '../helpers/tls-clients.js';
import { waitFor } from '../helpers/wait.js';

const CHAT = '/agents/support/api/v1/chat';

let dir: string;
let redis: TestRedis;
let upstream: FakeUpstream;
let first: TestCertificates;
let second: TestCertificates;
let trustBoth: ClientTls;
let port: number;
let apiKey: string;
let cluster: CliChild;
let primary: ChildProcess;
let certFile: string;
let keyFile: string;


/** Fingerprints served to `count` new connections (the cluster spreads them over the workers). */
async function servedToNewConnections(count: number): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) seen.add(await servedFingerprint(port, trustBoth));
  return seen;
}


beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-tls-workers-'));
  [first, second] = await Promise.all([makeTestCertificates('localhost'), makeTestCertificates('localhost')]);
  trustBoth = await clientTls([first.ca, second.ca]);
  redis = await startRedis();
  upstream = await startFakeUpstream();
  port = await freePort();
  certFile = join(dir, 'server.pem');
  keyFile = join(dir, 'server.key');
  await copyFile(first.serverCert, certFile);
  await copyFile(first.serverKey, keyFile);
  const document = {
    listen: { host: '127.0.0.1', port, tls: { cert: certFile, key: keyFile } },
    admin: { host: '127.0.0.1', port: await freePort() },
    redis: { url: redis.url, prefix: `agentgw-tls-workers-${process.pid}:` },
    keys: { file: join(dir, 'keys.json') },
    audit: { file: join(dir, 'audit.jsonl'), spool: join(dir, 'spool.jsonl') },
    shutdown_grace: '2s',
    agents: { support: { upstream: upstream.baseUrl } },
  };
  await writeFile(join(dir, 'gateway.yaml'), stringify(document));
  const store = await FileKeyStore.open({ path: join(dir, 'keys.json'), logger: silentLogger, watch: false });
  ({ rawKey: apiKey } = await new KeyService({ store, config: parseConfig(document, 'test', {}) }).createKey({ account: 'acme', plan: 'scale', agents: ['support'] }));
  await store.close();
  cluster = spawnBuiltCli(['serve', '--config', join(dir, 'gateway.yaml'), '--workers', '2'], { group: true });
  primary = cluster.child;
  await cluster.waitForOutput((output) => output.includes(`agent-gateway listening on https://127.0.0.1:${port}`) && output.includes('2 workers'), 'the cluster to listen', 30_000);
});

afterAll(async () => {
  if (primary && primary.exitCode === null && primary.signalCode === null) primary.kill('SIGKILL');
  await upstream?.close();
  await redis?.close();
  await first?.remove();
  await second?.remove();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('serve --workers 2 with listen.tls', () => {
  it('answers HTTPS over HTTP/1.1 and HTTP/2 from the shared port', async () => {
    const statuses = await Promise.all(Array.from({ length: 8 }, () => httpsPost(port, CHAT, { tls: trustBoth, apiKey, body: { message: 'hi' } }).then((a) => a.status)));
    expect(statuses).toEqual(Array(8).fill(200));
    const session = await openHttp2(port, trustBoth);
    try {
      expect((await http2Post(session, CHAT, apiKey, { message: 'hi' })).headers[':status']).toBe(200);
    } finally {
      session.close();
    }
  });

  it('each worker serves a replaced certificate to new connections without a restart', async () => {
    expect(await servedToNewConnections(4)).toEqual(new Set([fingerprintOf(first.serverCert)]));
    await replaceFile(keyFile, second.serverKey);
    await replaceFile(certFile, second.serverCert);
    // Eight new connections in a row, spread over both workers, all with the new certificate.
    const renewed = new Set([fingerprintOf(second.serverCert)]);
    await waitFor('every worker to serve the new certificate', async () => {
      const seen = await servedToNewConnections(8);
      return seen.size === 1 && seen.has([...renewed][0]!);
    }, 10_000, 100);
  });

  it('SIGHUP makes every worker read the files again', async () => {
    // Swapped back without waiting for the poll: SIGHUP applies it at once in each worker.
    await replaceFile(keyFile, first.serverKey);
    await replaceFile(certFile, first.serverCert);
    primary.kill('SIGHUP');
    await waitFor('every worker to serve the first certificate again', async () => {
      const seen = await servedToNewConnections(8);
      return seen.size === 1 && seen.has(fingerprintOf(first.serverCert));
    }, 10_000, 100);
    expect((await httpsPost(port, CHAT, { tls: trustBoth, apiKey, body: { message: 'hi' } })).status).toBe(200);
  });

  it('stops cleanly on SIGTERM', async () => {
    primary.kill('SIGTERM');
    const [code] = await cluster.exited;
    expect(code).toBe(0);
  });
});
