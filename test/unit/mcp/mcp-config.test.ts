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

  it('reads a stdio server: its command, session bound, environment (with ${VAR} substitution by the loader) and cwd', () => {
    const config = parseConfig({ ...BASE, mcp_servers: { git: { command: ['node', './git.mjs', '--flag'], max_sessions: 3, env: { GIT_TOKEN: 'abc' }, cwd: '/srv/git' } } }, 'test', {});
    expect(config.mcpServers.get('git')).toMatchObject({ name: 'git', transport: 'stdio', upstreams: [], command: ['node', './git.mjs', '--flag'], maxSessions: 3, env: { GIT_TOKEN: 'abc' }, cwd: '/srv/git' });
    const defaults = parseConfig({ ...BASE, mcp_servers: { git: { command: ['node'] } } }, 'test', {}).mcpServers.get('git')!;
    expect(defaults).toMatchObject({ maxSessions: 50, env: {}, cwd: null, timeoutMs: 60_000 });
  });

  it('refuses what cannot work, naming it', () => {
    expect(problems({ mcp_servers: { a__b: { upstream: 'http://127.0.0.1:1/mcp' } } })).toMatch(/MCP server names/);
    expect(problems({ mcp_servers: { files: {} } })).toMatch(/exactly one of/);
    expect(problems({ mcp_servers: { files: { upstream: 'http://127.0.0.1:1/mcp', headers: { 'Mcp-Session-Id': 'x' } } } })).toMatch(/sets this header itself/);
    expect(problems({ mcp_servers: { git: { command: [] } } })).toMatch(/command/);
    expect(problems({ mcp_servers: { git: { command: ['node', 'server.mjs'], upstream: 'http://127.0.0.1:1/mcp' } } })).toMatch(/exactly one of/);
    expect(problems({ mcp_servers: { git: { command: ['node', 'server.mjs'], headers: { Authorization: 'x' } } } })).toMatch(/give a stdio server its credentials in "env"/);
    expect(problems({ mcp_servers: { git: { upstream: 'http://127.0.0.1:1/mcp', env: { A: 'b' } } } })).toMatch(/"env" is for stdio servers/);
    expect(problems({ mcp_servers: { git: { upstream: 'http://127.0.0.1:1/mcp', cwd: '/tmp' } } })).toMatch(/"cwd" is for stdio servers/);
    expect(problems({ mcp_servers: { git: { command: ['node'], env: { 'NOT-A-NAME': 'x' } } } })).toMatch(/environment variable name/);
    expect(problems({ mcp_servers: { git: { command: ['node'], max_sessions: 0 } } })).toMatch(/max_sessions/);
    expect(problems({ mcp: { allowed_origins: ['not an origin'] } })).toMatch(/origin/);
    expect(problems({ plans: { p: { tool_calls: { 'files__*': [{ calls: 5, per: '1h' }] } } } })).toBe('valid');
  });
});
