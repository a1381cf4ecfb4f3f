// Files in tests: a fresh directory per test, and whether a path exists.
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A new directory under the OS temp dir, and the function that removes it with its contents. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'agentgw-test-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export const fileExists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);
