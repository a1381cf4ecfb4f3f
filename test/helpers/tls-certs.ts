// A throwaway certificate authority for TLS tests, made with the openssl CLI: a CA, a server
// certificate for `serverName` and a client certificate, all signed by the CA, as PEM files
// in a temporary directory (removed by remove()).
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCertificates {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  remove(): Promise<void>;
}

const KEY_OPTIONS = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export async function makeTestCertificates(serverName: string): Promise<TestCertificates> {
  const dir = await mkdtemp(join(tmpdir(), 'agentgw-tls-'));
  const path = (name: string): string => join(dir, name);
  const openssl = (...args: string[]): Promise<unknown> => run('openssl', args, { timeout: 20_000 });
  try {
    await openssl('req', '-x509', ...KEY_OPTIONS, '-keyout', path('ca.key'), '-out', path('ca.pem'), '-days', '2', '-subj', '/CN=agentgw test CA');
    await writeFile(path('server.ext'), `subjectAltName=DNS:${serverName}\n`);
    for (const [name, subject, extensions] of [['server', `/CN=${serverName}`, ['-extfile', path('server.ext')]], ['client', '/CN=agentgw test client', []]] as const) {
      await openssl('req', ...KEY_OPTIONS, '-keyout', path(`${name}.key`), '-out', path(`${name}.csr`), '-subj', subject);
      await openssl('x509', '-req', '-in', path(`${name}.csr`), '-CA', path('ca.pem'), '-CAkey', path('ca.key'), '-CAcreateserial', '-out', path(`${name}.pem`), '-days', '2', ...extensions);
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    dir,
    ca: path('ca.pem'),
    serverCert: path('server.pem'),
    serverKey: path('server.key'),
    clientCert: path('client.pem'),
    clientKey: path('client.key'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
