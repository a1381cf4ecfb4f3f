// Keys and JWT access tokens behind one Authenticator (docs/identity.md): a bearer that
// starts with `ha_` is a key; anything else goes to the JWT authenticator, which remembers
// the tokens it verified and refuses (invalid_token) whatever is not a JWT from a configured
// issuer. Built only when auth.jwt names an issuer: without one the pipeline holds the key
// authenticator itself and pays nothing for tokens.
import type { AuthenticatedKey } from '../keys/key-record.js';
import type { AuthenticateInput, Authenticator } from './authenticator.js';
import { extractBearerToken } from './bearer-token.js';
import type { JwtAuthenticator } from './jwt/jwt-authenticator.js';
import type { TokenRevocations } from './token-revocation-types.js';

function isKey(token: string): boolean {
  return token === '' || token.startsWith('ha_');
}

export class BearerAuthenticator implements Authenticator {
  constructor(
    private readonly keys: Authenticator,
    private readonly tokens: JwtAuthenticator,
    private readonly revocations: TokenRevocations,
  ) {}

  authenticateNow(input: AuthenticateInput): AuthenticatedKey | undefined {
    const token = extractBearerToken(input.authorization);
    return isKey(token) ? this.keys.authenticateNow(input) : this.tokens.acceptedNow(token, input);
  }

  authenticate(input: AuthenticateInput): Promise<AuthenticatedKey> {
    const token = extractBearerToken(input.authorization);
    return isKey(token) ? this.keys.authenticate(input) : this.tokens.authenticate(token, input);
  }

  async close(): Promise<void> {
    await this.revocations.close();
    await this.keys.close();
  }
}
