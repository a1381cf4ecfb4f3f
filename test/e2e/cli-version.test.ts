// `agent-gateway --version` prints the package's version.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { builtCliOutput } from '../helpers/cli.js';

describe('agent-gateway --version', () => {
  it('prints the version of package.json', async () => {
    const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    const stdout = await builtCliOutput(['--version']);
    expect(stdout).toBe(`${version}\n`);
  });
});
