// The canary for src/proxy/undici-classes.ts, which requires undici's Pool and Client from the
// package's internal files (lib/…) instead of its index (decision 0028). Internal paths are
// not undici's public API, which is why package.json pins undici with `~` (patch releases
// only); an upgrade that moves a file or changes what the index adds to the classes fails
// here before it reaches a gateway.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client as IndexClient, Pool as IndexPool } from 'undici';
import { describe, expect, it } from 'vitest';
import { Client, Pool } from '../../../src/proxy/undici-classes.js';

const run = promisify(execFile);

/**
 * In a fresh node process that loads either undici's index or only the built
 * undici-classes.js, the method names along Pool's and Client's prototype chains. A fresh
 * process each, because once the index is loaded it has patched the shared prototypes.
 */
async function methodsLoadedBy(source: 'index' | 'internal-files'): Promise<unknown> {
  const specifier = source === 'index' ? 'undici' : join(process.cwd(), 'dist/proxy/undici-classes.js');
  const script = `
    const { Pool, Client } = await import(${JSON.stringify(specifier)});
    const methods = (C) => {
      const names = [];
      for (let p = C.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
        for (const name of Object.getOwnPropertyNames(p)) if (typeof Object.getOwnPropertyDescriptor(p, name).value === 'function') names.push(name);
      }
      return names.sort();
    };
    process.stdout.write(JSON.stringify({ Pool: methods(Pool), Client: methods(Client) }));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: process.cwd() });
  return JSON.parse(stdout);
}

describe("undici's classes from their own files", () => {
  it('are the very classes the package index exports', () => {
    expect(Pool).toBe(IndexPool);
    expect(Client).toBe(IndexClient);
  });

  it('offer every method the index gives them, without the index loaded', async () => {
    const [fromIndex, fromFiles] = await Promise.all([methodsLoadedBy('index'), methodsLoadedBy('internal-files')]);
    // The request API (request, stream, pipeline, …) is what the index adds to Dispatcher.prototype.
    expect(fromIndex).toMatchObject({ Pool: expect.arrayContaining(['request', 'stream', 'dispatch']) });
    expect(fromFiles).toEqual(fromIndex);
  });
});
