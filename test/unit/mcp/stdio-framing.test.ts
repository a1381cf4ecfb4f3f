// The stdio transport's framing and the child's environment (docs/mcp.md "stdio servers";
// decisions 0100, 0101): lines split across chunks and joined, a line over the bound reported
// once and never held, a body's raw newlines made spaces, and an environment that holds PATH,
// HOME, LANG, TMPDIR and the server's `env`, never anything else of the gateway's.
import { describe, expect, it } from 'vitest';
import type { McpServerConfig } from '../../../src/config/schema.js';
import { childEnvironment } from '../../../src/mcp/stdio-environment.js';
import { asOneLine, LineSplitter } from '../../../src/mcp/stdio-lines.js';

function splitter(max: number): { lines: string[]; overflows: number; push(text: string | Buffer): void } {
  const state = { lines: [] as string[], overflows: 0, push: (text: string | Buffer) => lines.push(Buffer.isBuffer(text) ? text : Buffer.from(text)) };
  const lines = new LineSplitter(max, (line) => state.lines.push(line), () => (state.overflows += 1));
  return state;
}

describe('LineSplitter', () => {
  it('splits lines, joins a line cut across chunks (a multi-byte character too), drops CR and empty lines', () => {
    const s = splitter(1024);
    s.push('{"a":1}\n{"b":');
    s.push('2}\r\n\n{"c":"');
    const euro = Buffer.from('€');
    s.push(euro.subarray(0, 1));
    s.push(Buffer.concat([euro.subarray(1), Buffer.from('"}\n')]));
    expect(s.lines).toEqual(['{"a":1}', '{"b":2}', '{"c":"€"}']);
    expect(s.overflows).toBe(0);
  });

  it('a line over the bound is reported once, whether it comes whole or in pieces, and nothing after it is read', () => {
    const whole = splitter(100);
    whole.push(`{"ok":1}\n${'x'.repeat(101)}\n{"after":1}\n`);
    expect(whole.lines).toEqual(['{"ok":1}']);
    expect(whole.overflows).toBe(1);
    const pieces = splitter(1000);
    for (let i = 0; i < 10_000; i++) pieces.push('y'.repeat(1000));
    pieces.push('\n{"after":1}\n');
    expect(pieces.lines).toEqual([]);
    expect(pieces.overflows).toBe(1);
  });

  it('a line of exactly the bound passes', () => {
    const s = splitter(10);
    s.push(`${'z'.repeat(10)}\n`);
    expect(s.lines).toEqual(['z'.repeat(10)]);
  });
});

describe('asOneLine', () => {
  it('turns the raw newlines of a JSON body into spaces; the value is unchanged', () => {
    const body = Buffer.from('{\n  "jsonrpc": "2.0",\r\n  "method": "ping",\n  "params": { "text": "a\\nb" }\n}');
    const line = asOneLine(body);
    expect(line.includes(0x0a) || line.includes(0x0d)).toBe(false);
    expect(JSON.parse(line.toString('utf8'))).toEqual(JSON.parse(body.toString('utf8')));
    const flat = Buffer.from('{"a":1}');
    expect(asOneLine(flat)).toBe(flat);
  });
});

describe('childEnvironment', () => {
  const server = (env: Record<string, string>) => ({ name: 'git', env }) as unknown as McpServerConfig;

  it('holds PATH, HOME, LANG, TMPDIR and the server env, nothing else of the gateway', () => {
    const gatewayEnv = { PATH: '/bin', HOME: '/home/gw', LANG: 'C.UTF-8', TMPDIR: '/tmp', REDIS_PASSWORD: 'secret', AGENTGW_ADMIN_TOKEN: 'token' };
    expect(childEnvironment(server({ GIT_TOKEN: 'for-git', HOME: '/srv/git' }), gatewayEnv)).toEqual({ PATH: '/bin', HOME: '/srv/git', LANG: 'C.UTF-8', TMPDIR: '/tmp', GIT_TOKEN: 'for-git' });
  });

  it('gives a PATH when the gateway has none', () => {
    expect(childEnvironment(server({}), {})).toEqual({ PATH: '/usr/local/bin:/usr/bin:/bin' });
  });
});
