// What a stdio MCP server's child process is started with (docs/mcp.md "stdio servers";
// decision 0101): never the gateway's environment, which holds its secrets (Redis passwords,
// admin tokens, other servers' credentials), but a minimal one — PATH, HOME, LANG and TMPDIR as
// the gateway has them — plus the server's own `env` (its values already `${VAR}`-substituted
// by the config loader, so a secret is handed to the one server that needs it).
import type { McpServerConfig } from '../config/schema.js';

/** The variables a child gets from the gateway's environment, when set there. */
export const INHERITED_VARIABLES = ['PATH', 'HOME', 'LANG', 'TMPDIR'] as const;

const FALLBACK_PATH = '/usr/local/bin:/usr/bin:/bin';

export function childEnvironment(server: McpServerConfig, gatewayEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_VARIABLES) {
    const value = gatewayEnv[name];
    if (value !== undefined && value !== '') env[name] = value;
  }
  env.PATH ??= FALLBACK_PATH;
  return { ...env, ...server.env };
}
