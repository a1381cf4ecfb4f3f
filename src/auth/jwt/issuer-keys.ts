// One issuer's signing keys (docs/identity.md "Keys and rotation"): its discovery document
// names the JWKS, whose keys jose's createLocalJWKSet selects by `kid`, `alg` and key type. A
// cache of our own around that primitive rather than createRemoteJWKSet, because the bound on
// refetches must hold when the provider fails too: createRemoteJWKSet counts its cooldown
// from the last successful read, so while the JWKS endpoint is down every unknown `kid` (and,
// once its cache has aged, every token) would send another request to the provider.
//
// The rules:
// - one read (discovery, then JWKS) at the first token; concurrent tokens share it;
// - an unknown `kid` reads again at most once per `jwksRefetchIntervalMs`, counted from the
//   last attempt whatever its outcome: a flood of made-up kids costs the provider one request
//   per interval, and a rotated key is picked up at the first token that uses it;
// - after `jwksMaxAgeMs` the keys are read again in the background; until then, and while
//   that read fails, the keys held keep verifying what they signed;
// - with no keys held (the provider never answered) nothing verifies: the token is refused.
import { createLocalJWKSet, errors, type FlattenedJWSInput, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import type { Clock } from '../../clock.js';
import type { JwtIssuerConfig } from '../../config/auth-schema.js';
import type { Logger } from '../../logger.js';
import { metrics } from '../../metrics/metrics.js';
import { discoveryUrl, fetchProviderJson, jwksUriOf, ProviderDocumentError } from './provider-documents.js';

type LocalKeys = ReturnType<typeof createLocalJWKSet>;
export type KeyResolver = (header: JWSHeaderParameters, token: FlattenedJWSInput) => ReturnType<LocalKeys>;

/** No keys could be read (or may not be read yet): nothing signed by this issuer can be verified now. */
export class IssuerKeysUnavailable extends Error {
  override readonly name = 'IssuerKeysUnavailable';
}

export class IssuerKeys {
  private local: LocalKeys | undefined = undefined;
  private jwksUri: string | undefined = undefined;
  private readAtMs = Number.NEGATIVE_INFINITY;
  private attemptedAtMs = Number.NEGATIVE_INFINITY;
  private pending: Promise<void> | undefined = undefined;

  constructor(
    private readonly issuer: Pick<JwtIssuerConfig, 'issuer' | 'jwksRefetchIntervalMs' | 'jwksMaxAgeMs'>,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** jose's key resolver for jwtVerify: the key for the token's header, or a jose error / IssuerKeysUnavailable. */
  readonly resolve: KeyResolver = async (header, token) => {
    const now = this.clock.now();
    if (this.local === undefined) {
      await this.read(now);
    } else if (now - this.readAtMs >= this.issuer.jwksMaxAgeMs && this.mayAttempt(now)) {
      // Aged: read again behind the requests; the keys held verify meanwhile.
      this.read(now).catch(() => undefined);
    }
    try {
      return await this.local!(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      // An unknown kid: perhaps a rotated key. Read again unless that was tried too recently
      // (then wait for a read already under way, which may bring it).
      if (this.pending !== undefined) await this.pending.catch(() => undefined);
      else if (this.mayAttempt(this.clock.now())) await this.read(this.clock.now());
      else throw error;
      return await this.local!(header, token);
    }
  };

  private mayAttempt(now: number): boolean {
    return now - this.attemptedAtMs >= this.issuer.jwksRefetchIntervalMs;
  }

  /** One read at a time; none within the refetch interval of the last attempt. */
  private read(now: number): Promise<void> {
    if (this.pending !== undefined) return this.pending;
    if (!this.mayAttempt(now)) return Promise.reject(new IssuerKeysUnavailable(`the keys of ${this.issuer.issuer} could not be read recently; not trying again yet`));
    this.attemptedAtMs = now;
    const pending = this.load().finally(() => {
      if (this.pending === pending) this.pending = undefined;
    });
    this.pending = pending;
    return pending;
  }

  private async load(): Promise<void> {
    try {
      this.jwksUri ??= jwksUriOf(await fetchProviderJson(discoveryUrl(this.issuer.issuer)), this.issuer.issuer);
      const jwks = await fetchProviderJson(this.jwksUri);
      let local: LocalKeys;
      try {
        local = createLocalJWKSet(jwks as unknown as JSONWebKeySet);
      } catch {
        throw new ProviderDocumentError(`${this.jwksUri} is not a JSON Web Key Set`);
      }
      this.local = local;
      this.readAtMs = this.clock.now();
      metrics.jwksFetches.labels('ok').inc();
    } catch (error) {
      metrics.jwksFetches.labels('error').inc();
      // The next attempt reads the discovery document again: the JWKS may have moved.
      this.jwksUri = undefined;
      const reason = error instanceof Error ? error.message : String(error);
      this.logger.warn({ issuer: this.issuer.issuer, reason }, 'identity provider keys could not be read');
      throw new IssuerKeysUnavailable(reason);
    }
  }
}
