// The two documents a resource server reads from its identity provider: the discovery
// document (OpenID Connect Discovery 1.0, which names `jwks_uri`) and the JWKS itself. Read
// with a deadline, a size bound and no redirects: the provider's answers are input like any
// other, and a slow or huge one must neither hang verification nor fill memory.
import { isLoopbackHost } from '../../config/auth-schema.js';

/** Past this a provider document is refused (real ones are a few KiB). */
const MAX_DOCUMENT_BYTES = 512 * 1024;
const FETCH_TIMEOUT_MS = 5_000;

export class ProviderDocumentError extends Error {
  override readonly name = 'ProviderDocumentError';
}

/** The issuer's discovery document URL: `/.well-known/openid-configuration` under the issuer (its trailing "/" dropped). */
export function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
}

/** Reads `url` as a JSON object, or throws ProviderDocumentError saying why (never the body). */
export async function fetchProviderJson(url: string): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers: { accept: 'application/json, application/jwk-set+json' } });
  } catch (error) {
    throw new ProviderDocumentError(`${url} could not be read: ${(error as Error).name}`);
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined);
    throw new ProviderDocumentError(`${url} answered ${response.status}`);
  }
  const text = await boundedText(response, url);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ProviderDocumentError(`${url} is not JSON`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ProviderDocumentError(`${url} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

async function boundedText(response: Response, url: string): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_DOCUMENT_BYTES) {
        await reader.cancel().catch(() => undefined);
        throw new ProviderDocumentError(`${url} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof ProviderDocumentError) throw error;
    throw new ProviderDocumentError(`${url} could not be read: ${(error as Error).name}`);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The JWKS URL the discovery document names, checked: the document must be the issuer's own
 * (`issuer` equal to the configured one, as OpenID Connect Discovery 1.0 section 4.3
 * requires), and the URL https (http only on a loopback host).
 */
export function jwksUriOf(document: Record<string, unknown>, issuer: string): string {
  if (document.issuer !== issuer) throw new ProviderDocumentError(`the discovery document names another issuer than ${issuer}`);
  const uri = document.jwks_uri;
  if (typeof uri !== 'string') throw new ProviderDocumentError('the discovery document has no jwks_uri');
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new ProviderDocumentError('the discovery document\'s jwks_uri is not a URL');
  }
  if (!(url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname)))) {
    throw new ProviderDocumentError('the discovery document\'s jwks_uri is not https');
  }
  return url.href;
}
