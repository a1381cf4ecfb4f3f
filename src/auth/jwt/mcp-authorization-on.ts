// The MCP front door's identity when auth.jwt names an issuer (src/auth/mcp-authorization.ts):
// each server's audience, challenges and metadata text made once, at the server's first
// request, and reused; the front door asks only for configured servers (and `/mcp`, the
// aggregated endpoint), so what is kept is bounded by mcp_servers.
import type { JwtIssuerConfig } from '../../config/auth-schema.js';
import type { McpAuthorization } from '../mcp-authorization.js';
import { mcpChallenge, mcpResourceUrl, protectedResourceMetadata } from './protected-resource.js';

interface ServerAuthorization {
  audience: string | undefined;
  challenge: string | undefined;
  invalidTokenChallenge: string | undefined;
  metadata: string | undefined;
}

export function mcpAuthorizationOn(issuers: readonly JwtIssuerConfig[]): McpAuthorization {
  // The aggregated endpoint `/mcp` under '' (never a server name).
  const servers = new Map<string, ServerAuthorization>();
  const of = (server: string | undefined): ServerAuthorization => {
    let known = servers.get(server ?? '');
    if (known === undefined) {
      const metadata = protectedResourceMetadata(issuers, server);
      known = {
        audience: mcpResourceUrl(issuers, server),
        challenge: mcpChallenge(issuers, server, false),
        invalidTokenChallenge: mcpChallenge(issuers, server, true),
        metadata: metadata === undefined ? undefined : JSON.stringify(metadata),
      };
      servers.set(server ?? '', known);
    }
    return known;
  };
  return {
    on: true,
    audience: (server) => of(server).audience,
    challenge: (server, invalidToken) => (invalidToken ? of(server).invalidTokenChallenge : of(server).challenge),
    metadata: (server) => of(server).metadata,
  };
}
