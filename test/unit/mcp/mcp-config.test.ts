// `mcp_servers` and `mcp` in the one config schema (docs/mcp.md "Configuration").
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load-config.js';

const BASE = { agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } } };

function problems(document: Record<string, unknown>): string {
  try {
    parseConfig({ ...BASE, ...document }, 'test', {});
  } catch (error) {
    return (error as Error).message;
  }
  return 'valid';
}

describe('MCP config', () => {
  it('reads servers with their defaults and the front door settings', () => {
    const config = parseConfig({ ...BASE, mcp_servers: { files: { upstream: 'http://127.0.0.1:3001/mcp', tools: ['read_file'] }, git: { upstreams: [{ url: 'http://127.0.0.1:1/mcp', weight: 2 }, { url: 'http://127.0.0.2:1/mcp' }] } } }, 'test', {});
    const files = config.mcpServers.get('files')!;
    expect(files).toMatchObject({ name: 'files', transport: 'http', timeoutMs: 60_000, headers: {}, prompts: null });
    expect([...files.tools!]).toEqual(['read_file']);
    expect(config.mcpServers.get('git')!.upstreams.map((u) => u.weight)).toEqual([2, 1]);
    expect(config.mcp).toEqual({ allowedOrigins: new Set(), sessionIdleMs: 3_600_000, maxBodyBytes: 4 * 1024 * 1024, maxResponseBytes: 16 * 1024 * 1024 });
    expect(parseConfig(BASE, 'test', {}).mcpServers.size).toBe(0);
  });

  it('refuses what cannot work, naming it', () => {
    expect(problems({ mcp_servers: { a__b: { upstream: 'http://127.0.0.1:1/mcp' } } })).toMatch(/MCP server names/);
    expect(problems({ mcp_servers: { files: {} } })).toMatch(/exactly one of/);
    expect(problems({ mcp_servers: { files: { upstream: 'http://127.0.0.1:1/mcp', headers: { 'Mcp-Session-Id': 'x' } } } })).toMatch(/sets this header itself/);
    expect(problems({ mcp_servers: { git: { command: ['node', 'server.mjs'] } } })).toMatch(/stdio MCP servers are not supported/);
    expect(problems({ mcp: { allowed_origins: ['not an origin'] } })).toMatch(/origin/);
    expect(problems({ plans: { p: { tool_calls: { 'files__*': [{ calls: 5, per: '1h' }] } } } })).toBe('valid');
  });
});
