// The dashboard's built files (web/, built by `npm run build` into dist/dashboard/), served
// from memory. The directory is read once into a map of its files, and a request is answered
// only when its path is one of those names, so no path can reach outside the directory.
// Vite names the files under assets/ by their content hash: those may be cached for a year;
// index.html is revalidated on every load so a new build is picked up.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** src/admin/ and dist/admin/ both sit two levels below the package root. */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../dist/dashboard/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/** Below this, gzip saves too little to be worth the header. */
const GZIP_MIN_BYTES = 1024;

export interface DashboardAsset {
  body: Buffer;
  /** The gzip form, kept when it is smaller (text files). */
  gzip: Buffer | undefined;
  contentType: string;
  etag: string;
  /** Content-hashed name: never changes, may be cached for good. */
  immutable: boolean;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(entries.map((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [])));
  return nested.flat();
}

/** Every file of `dir` by its path relative to it, with "/" separators; empty when `dir` is missing. */
export async function loadDashboardAssets(dir: string): Promise<Map<string, DashboardAsset>> {
  const assets = new Map<string, DashboardAsset>();
  let files: string[];
  try {
    files = await filesUnder(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return assets;
    throw error;
  }
  for (const file of files) {
    const name = relative(dir, file).split(sep).join('/');
    const contentType = CONTENT_TYPES[extname(name)] ?? 'application/octet-stream';
    const body = await readFile(file);
    const compressible = contentType.startsWith('text/') || contentType.startsWith('application/json') || contentType === 'image/svg+xml';
    const zipped = compressible && body.length >= GZIP_MIN_BYTES ? gzipSync(body, { level: 9 }) : undefined;
    assets.set(name, {
      body,
      gzip: zipped && zipped.length < body.length ? zipped : undefined,
      contentType,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      immutable: name.startsWith('assets/'),
    });
  }
  return assets;
}

function acceptsGzip(req: IncomingMessage): boolean {
  const accept = req.headers['accept-encoding'];
  return typeof accept === 'string' && /\bgzip\b/.test(accept);
}

/** Writes one asset (GET or HEAD), with 304 when the browser's copy is current. */
export function sendAsset(req: IncomingMessage, res: ServerResponse, asset: DashboardAsset): void {
  res.setHeader('Content-Type', asset.contentType);
  res.setHeader('Cache-Control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
  res.setHeader('ETag', asset.etag);
  res.setHeader('Vary', 'Accept-Encoding');
  if (req.headers['if-none-match'] === asset.etag) {
    res.statusCode = 304;
    res.end();
    return;
  }
  const body = asset.gzip !== undefined && acceptsGzip(req) ? asset.gzip : asset.body;
  if (body === asset.gzip) res.setHeader('Content-Encoding', 'gzip');
  res.statusCode = 200;
  res.setHeader('Content-Length', body.length);
  res.end(req.method === 'HEAD' ? undefined : body);
}
