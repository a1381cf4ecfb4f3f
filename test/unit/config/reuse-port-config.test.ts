// listen.reuse_port (several standalone instances on one port): the field, its default, env
// substitution, and the config error where the platform or Node cannot do it.
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.js';
import { configProblems as problems, MINIMAL_CONFIG as MINIMAL } from '../../helpers/config-problems.js';
import { reusePortUnsupported } from '../../../src/config/reuse-port-support.js';


const realPlatform = Object.getOwnPropertyDescriptor(process, 'platform')!;
afterEach(() => {
  Object.defineProperty(process, 'platform', realPlatform);
});

describe('listen.reuse_port', () => {
  it('is off by default, on when set, and takes a value from the environment', () => {
    expect(parseConfigText(MINIMAL, 'test.yaml', {}).listen.reusePort).toBe(false);
    expect(parseConfigText(`${MINIMAL}listen: { reuse_port: true }\n`, 'test.yaml', {}).listen.reusePort).toBe(true);
    const text = `${MINIMAL}listen: { reuse_port: \${REUSE_PORT:-false} }\n`;
    expect(parseConfigText(text, 'test.yaml', { REUSE_PORT: 'true' }).listen.reusePort).toBe(true);
    expect(parseConfigText(text, 'test.yaml', {}).listen.reusePort).toBe(false);
  });

  it('refuses a value that is not a boolean', () => {
    expect(problems(`${MINIMAL}listen: { reuse_port: yes please }\n`)[0]).toMatch(/^listen\.reuse_port/);
  });

  it('is a config error on a platform without SO_REUSEPORT spreading, and allowed off there', () => {
    Object.defineProperty(process, 'platform', { ...realPlatform, value: 'darwin' });
    expect(problems(`${MINIMAL}listen: { reuse_port: true }\n`)).toEqual([expect.stringMatching(/^listen\.reuse_port: needs Linux .*darwin/)]);
    expect(parseConfigText(`${MINIMAL}listen: { reuse_port: false }\n`, 'test.yaml', {}).listen.reusePort).toBe(false);
  });
});

describe('reusePortUnsupported', () => {
  it('accepts Linux with Node 22.12+, 23.1+ and later lines', () => {
    for (const version of ['22.12.0', 'v22.20.1', '23.1.0', '24.21.0', '26.0.0']) expect(reusePortUnsupported('linux', version)).toBeUndefined();
  });

  it('names what is missing: an older Node, or another platform', () => {
    expect(reusePortUnsupported('linux', '22.11.0')).toMatch(/needs Node 22\.12 or later.*22\.11\.0/);
    expect(reusePortUnsupported('linux', '23.0.0')).toMatch(/needs Node 22\.12/);
    expect(reusePortUnsupported('linux', '20.19.0')).toMatch(/needs Node 22\.12/);
    expect(reusePortUnsupported('win32', '24.21.0')).toMatch(/needs Linux.*win32/);
  });
});
