// The request pipeline's view of authentication: one call per request.
import type { AuthenticatedKey } from '../keys/key-record.js';

export interface AuthenticateInput {
  /** The raw Authorization header, if any. */
  authorization: string | undefined;
  /** The agent the route resolved to. */
  agentId: string;
  /** Client address, for the failed-attempt throttle. */
  clientIp: string;
  /**
   * The client's connection (its socket), when there is one: a keep-alive connection that
   * presents the same key again skips the checksum and the SHA-256 (KeyAuthenticator).
   */
  connection?: object;
  /**
   * A JWT access token must name this in `aud` (RFC 8707): an MCP endpoint passes its
   * resource URL (mcpResourceUrl, src/auth/jwt/protected-resource.ts), and the agent scope is
   * then not checked (the endpoint checks the MCP scope). Absent: the chat routes, whose
   * tokens name one of the issuer's configured audiences. Keys ignore it.
   */
  audience?: string;
}

export interface Authenticator {
  /**
   * Resolves the caller, or throws a GatewayError: missing_api_key, invalid_api_key,
   * expired_api_key, revoked_api_key, invalid_token, agent_not_allowed (401), rate_limit_exceeded (429,
   * failed-attempt throttle) or store_unavailable (503).
   */
  authenticate(input: AuthenticateInput): Promise<AuthenticatedKey>;
  /**
   * The caller, when it is known without waiting and passes every check (a fresh cached
   * key); otherwise undefined, and nothing was counted: call authenticate(), which decides
   * every other case. Lets the request pipeline skip a promise and an await per request.
   */
  authenticateNow(input: AuthenticateInput): AuthenticatedKey | undefined;
  close(): Promise<void>;
}
