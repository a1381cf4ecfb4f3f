// What the MCP front door asks of identity (docs/identity.md "MCP clients"): the audience a
// token for a server must name (RFC 8707), the 401 challenge that points to the protected
// resource metadata, and that metadata (RFC 9728). An interface with a null object, so a
// gateway without auth.jwt loads nothing of src/auth/jwt/ (decision 0108) and its MCP
// endpoints answer as before: keys only, the plain `Bearer` challenge, no metadata.
// The "on" half is src/auth/jwt/mcp-authorization-on.ts, built by src/auth/jwt/identity-on.ts.

/** RFC 9728's well-known path segment. */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

export interface McpAuthorization {
  /** Whether JWT access tokens are taken (an issuer is configured). */
  readonly on: boolean;
  // `server` undefined: the aggregated endpoint `/mcp` (every server of the caller's scope).
  /** What a token for this MCP server must name in `aud`; undefined with tokens off. */
  audience(server: string | undefined): string | undefined;
  /**
   * The `WWW-Authenticate` value of a 401 on this server's endpoint: `Bearer
   * resource_metadata="…"`, with `error="invalid_token"` when a credential was presented and
   * refused; undefined with tokens off (the plain `Bearer` challenge).
   */
  challenge(server: string | undefined, invalidToken: boolean): string | undefined;
  /** The server's RFC 9728 metadata document as JSON text; undefined with tokens off. */
  metadata(server: string | undefined): string | undefined;
}

export const NO_MCP_AUTHORIZATION: McpAuthorization = {
  on: false,
  audience: () => undefined,
  challenge: () => undefined,
  metadata: () => undefined,
};
