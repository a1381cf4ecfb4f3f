// The dashboard's static files: read once into memory by name, the right content types,
// year-long caching only for content-hashed assets, gzip when asked, 304 on a matching ETag.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDashboardAssets, sendAsset, type DashboardAsset } from '../../../src/admin/dashboard-assets.js';

let dir: string;
let assets: Map<string, DashboardAsset>;
let server: Server;
let base: string;
const script = `console.log(${JSON.stringify('x'.repeat(4000))});\n`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-assets-'));
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'index.html'), '<!doctype html><title>t</title>');
  await writeFile(join(dir, 'assets', 'index-abc123.js'), script);
  await writeFile(join(dir, 'assets', 'index-abc123.css'), 'body{}');
  await writeFile(join(dir, 'favicon.svg'), '<svg/>');
  await writeFile(join(dir, 'blob.bin'), Buffer.from([1, 2, 3]));
  assets = await loadDashboardAssets(dir);
  server = createServer((req, res) => {
    const asset = assets.get(decodeURIComponent(req.url!.slice(1)));
    if (!asset) {
      res.statusCode = 404;
      res.end();
      return;
    }
    sendAsset(req, res, asset);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(`${base}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}

describe('dashboard assets', () => {
  it('maps every file by its relative name with its content type', () => {
    expect([...assets.keys()].sort()).toEqual(['assets/index-abc123.css', 'assets/index-abc123.js', 'blob.bin', 'favicon.svg', 'index.html']);
    expect(assets.get('index.html')!.contentType).toBe('text/html; charset=utf-8');
    expect(assets.get('assets/index-abc123.js')!.contentType).toBe('text/javascript; charset=utf-8');
    expect(assets.get('assets/index-abc123.css')!.contentType).toBe('text/css; charset=utf-8');
    expect(assets.get('favicon.svg')!.contentType).toBe('image/svg+xml');
    expect(assets.get('blob.bin')!.contentType).toBe('application/octet-stream');
  });

  it('is empty for a directory that does not exist (not built)', async () => {
    expect((await loadDashboardAssets(join(dir, 'missing'))).size).toBe(0);
  });

  it('caches hashed assets for good and revalidates the page', async () => {
    const js = await get('/assets/index-abc123.js');
    expect(js.status).toBe(200);
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.body.toString()).toBe(script);
    const page = await get('/index.html');
    expect(page.headers['cache-control']).toBe('no-cache');
  });

  it('sends gzip to a browser that accepts it, the plain bytes otherwise', async () => {
    const zipped = await get('/assets/index-abc123.js', { 'accept-encoding': 'gzip, deflate, br' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.body.length).toBeLessThan(script.length / 10);
    expect(gunzipSync(zipped.body).toString()).toBe(script);
    // Too small to be worth compressing.
    expect((await get('/index.html', { 'accept-encoding': 'gzip' })).headers['content-encoding']).toBeUndefined();
  });

  it('answers 304 without a body when the ETag matches', async () => {
    const first = await get('/index.html');
    const again = await get('/index.html', { 'if-none-match': String(first.headers.etag) });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect((await get('/index.html', { 'if-none-match': '"other"' })).status).toBe(200);
  });
});
