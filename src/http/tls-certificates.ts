// The public listener's certificate (`listen.tls`, docs/operations.md "TLS"): the PEM files read
// into a secure context, and read again when they change on disk or on SIGHUP. A new
// certificate applies to new connections only (server.setSecureContext); connections already
// open keep the one they agreed on, so nothing is dropped. A file that cannot be read or does
// not make a valid context (half-written, key not matching the certificate) keeps the running
// certificate and logs why; the next change tries again.
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { GatewayConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';

export type ListenTls = NonNullable<GatewayConfig['listen']['tls']>;

/**
 * How often the files are polled. Polling (fs.watchFile), not fs.watch: certificate managers
 * replace files by rename or by swapping a symlinked directory (Kubernetes secrets), which an
 * inotify watch on the old inode never reports.
 */
const POLL_INTERVAL_MS = 1_000;
/** A renewal writes the certificate and the key one after the other: read once both have landed. */
const SETTLE_MS = 250;

/** The server's TLS options for the files' current contents; throws naming the key and file. */
export async function readListenTls(tls: ListenTls): Promise<SecureContextOptions> {
  const [cert, key, ca] = await Promise.all([readPem('cert', tls.certFile), readPem('key', tls.keyFile), tls.caFile === undefined ? undefined : readPem('ca', tls.caFile)]);
  const options: SecureContextOptions = { cert, key, minVersion: tls.minVersion };
  if (ca !== undefined) options.ca = ca;
  // Throws now, with OpenSSL's reason, for a key that does not match or a PEM that does not parse.
  createSecureContext(options);
  return options;
}

async function readPem(field: string, path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(`listen.tls.${field}: cannot read ${path}: ${code}`, { cause: error });
  }
}

/** What the watcher needs of the server: node:https and node:http2 servers both have it. */
export interface SecureContextTarget {
  setSecureContext(options: SecureContextOptions): void;
}

/** Watches the certificate files and applies their new contents to the server. */
export class CertificateReloader {
  private timer: NodeJS.Timeout | undefined;
  private reloading: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly paths: string[];
  private readonly onChange = (current: Stats, previous: Stats): void => {
    if (current.mtimeMs === previous.mtimeMs && current.ino === previous.ino && current.size === previous.size) return;
    this.schedule();
  };

  constructor(
    private readonly tls: ListenTls,
    private readonly server: SecureContextTarget,
    private readonly logger: Logger,
  ) {
    this.paths = [tls.certFile, tls.keyFile, ...(tls.caFile === undefined ? [] : [tls.caFile])];
    // persistent: false: the watch never holds the process open at shutdown.
    for (const path of this.paths) watchFile(path, { interval: POLL_INTERVAL_MS, persistent: false }, this.onChange);
  }

  /** Reads the files now (SIGHUP); resolves once applied or refused. */
  reload(): Promise<void> {
    this.reloading = this.reloading.then(() => this.apply());
    return this.reloading;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const path of this.paths) unwatchFile(path, this.onChange);
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), SETTLE_MS);
    this.timer.unref();
  }

  private async apply(): Promise<void> {
    if (this.closed) return;
    let options: SecureContextOptions;
    try {
      options = await readListenTls(this.tls);
      this.server.setSecureContext(options);
    } catch (error) {
      this.logger.error({ err: { message: (error as Error).message }, cert: this.tls.certFile }, 'TLS certificate reload refused; keeping the running certificate');
      return;
    }
    this.logger.info({ cert: this.tls.certFile, key: this.tls.keyFile, ...(this.tls.caFile === undefined ? {} : { ca: this.tls.caFile }) }, 'TLS certificate reloaded');
  }
}
