// Clients for the gateway's TLS listener in tests: HTTPS (HTTP/1.1) requests on a connection the
// test controls, the certificate a new connection is served, and HTTP/2 requests on a session.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { copyFile, readFile, rename } from 'node:fs/promises';
import { connect as connectHttp2, type ClientHttp2Session, type IncomingHttpHeaders as Http2Headers } from 'node:http2';
import { Agent, request, type RequestOptions } from 'node:https';
import { connect as connectTls, type TLSSocket } from 'node:tls';

/** The name the test certificates are made for (tls-certs.ts). */
export const TLS_SERVER_NAME = 'localhost';

export interface ClientTls {
  /** PEM text of the CA(s) the client trusts. */
  ca: string | string[];
  cert?: string;
  key?: string;
}

/** Reads PEM files into a ClientTls. */
export async function clientTls(caFiles: string[], certFile?: string, keyFile?: string): Promise<ClientTls> {
  const ca = await Promise.all(caFiles.map((file) => readFile(file, 'utf8')));
  return { ca, ...(certFile ? { cert: await readFile(certFile, 'utf8') } : {}), ...(keyFile ? { key: await readFile(keyFile, 'utf8') } : {}) };
}

export interface HttpsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** SHA-256 fingerprint of the certificate the connection was served. */
  fingerprint: string;
  /** The ALPN protocol the connection agreed on. */
  alpn: string | false;
}

/** A keep-alive agent holding at most one connection, so consecutive requests share it. */
export function oneConnectionAgent(tls: ClientTls): Agent {
  return new Agent({ keepAlive: true, maxSockets: 1, ...tls, servername: TLS_SERVER_NAME });
}

/** POSTs JSON over HTTPS/1.1 (ALPN http/1.1) to 127.0.0.1:port. */
export function httpsPost(port: number, path: string, options: { tls: ClientTls; agent?: Agent; apiKey?: string; body: unknown }): Promise<HttpsAnswer> {
  const payload = JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        servername: TLS_SERVER_NAME,
        // Offered as an HTTP/1.1-only client (curl --http1.1) does: the gateway picks it.
        ALPNProtocols: ['http/1.1'],
        ...(options.agent ? { agent: options.agent } : { agent: false as const, ...options.tls }),
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
      } as unknown as RequestOptions,
      (res) => {
        const socket = res.socket as TLSSocket;
        const fingerprint = socket.getPeerCertificate().fingerprint256;
        const alpn = socket.alpnProtocol ?? false;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, fingerprint, alpn }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The fingerprint of the certificate a brand-new TLS connection to the port is served. */
export function servedFingerprint(port: number, tls: ClientTls): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connectTls({ host: '127.0.0.1', port, servername: TLS_SERVER_NAME, ALPNProtocols: ['http/1.1'], ...tls }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolve(fingerprint);
    });
    socket.on('error', reject);
  });
}

/** An HTTP/2 session to 127.0.0.1:port; resolves once connected. */
export function openHttp2(port: number, tls: ClientTls): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = connectHttp2(`https://${TLS_SERVER_NAME}:${port}`, { ...tls, host: '127.0.0.1', servername: TLS_SERVER_NAME } as never);
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

export interface Http2Answer {
  headers: Http2Headers;
  body: string;
  /** Every data chunk as it arrived. */
  chunks: string[];
}

/** POSTs JSON on an HTTP/2 session; `onChunk` sees each data chunk as it arrives. */
export function http2Post(session: ClientHttp2Session, path: string, apiKey: string, body: unknown, onChunk?: (text: string, all: string) => void): Promise<Http2Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', authorization: `Bearer ${apiKey}` });
    let headers: Http2Headers = {};
    let text = '';
    const chunks: string[] = [];
    stream.setEncoding('utf8');
    stream.on('response', (h) => (headers = h));
    stream.on('data', (chunk: string) => {
      chunks.push(chunk);
      text += chunk;
      onChunk?.(chunk, text);
    });
    stream.on('end', () => resolve({ headers, body: text, chunks }));
    stream.on('error', reject);
    stream.end(JSON.stringify(body));
  });
}

/** The SHA-256 fingerprint of a PEM certificate file, as getPeerCertificate() gives it. */
export function fingerprintOf(file: string): string {
  return new X509Certificate(readFileSync(file)).fingerprint256;
}

/** Replaces a file the way certificate managers do: written beside it, then renamed over it. */
export async function replaceFile(target: string, source: string): Promise<void> {
  await copyFile(source, `${target}.new`);
  await rename(`${target}.new`, target);
}
