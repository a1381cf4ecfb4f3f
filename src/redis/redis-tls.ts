// TLS for Redis connections (`redis.tls`, `rediss://`): the PEM files are read once, when the
// client factory is built, so a missing or unreadable file stops the start with a message
// that names the key and the file, instead of failing every connection attempt later.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';

/** `redis.tls` as configured: PEM file paths and the name to verify the server's certificate against. */
export interface RedisTlsFiles {
  ca?: string | undefined;
  cert?: string | undefined;
  key?: string | undefined;
  servername?: string | undefined;
}

/**
 * The TLS options of every connection, or undefined for plain TCP. TLS is on when
 * `redis.tls` is set (an empty block: the system's CAs) or the single-server URL is
 * `rediss://`.
 */
export function readRedisTls(tls: RedisTlsFiles | undefined, url: string | undefined): ConnectionOptions | undefined {
  if (tls === undefined) return url?.startsWith('rediss://') ? {} : undefined;
  const options: ConnectionOptions = {};
  if (tls.ca !== undefined) options.ca = readPem('ca', tls.ca);
  if (tls.cert !== undefined) options.cert = readPem('cert', tls.cert);
  if (tls.key !== undefined) options.key = readPem('key', tls.key);
  if (tls.servername !== undefined) options.servername = tls.servername;
  return options;
}

function readPem(field: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(`redis.tls.${field}: cannot read ${path}: ${code}`, { cause: error });
  }
}
