// `agent-gateway --version` prints the package's version.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CLI_PATH } from '../helpers/gateway-process.js';

describe('agent-gateway --version', () => {
  it('prints the version of package.json', async () => {
    const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    const { stdout } = await promisify(execFile)(process.execPath, [CLI_PATH, '--version']);
    expect(stdout).toBe(`${version}\n`);
  });
});
