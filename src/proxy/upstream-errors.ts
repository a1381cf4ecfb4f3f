// Classifies undici's errors into the typed upstream failures of src/request/upstream-failure-kind.ts.
import type { UpstreamFailureKind } from '../request/upstream-failure-kind.js';


export interface UpstreamFailure {
  kind: UpstreamFailureKind;
  detail: string;
}

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'EADDRNOTAVAIL']);
/** A TLS handshake the gateway refused (untrusted or mismatched certificate) or the runner refused (our client certificate). */
function isTlsHandshakeCode(code: string): boolean {
  return code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.includes('CERT') || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE';
}
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'ECONNABORTED']);
const HEADERS_TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT']);
const IDLE_TIMEOUT_CODES = new Set(['UND_ERR_BODY_TIMEOUT']);
const BAD_RESPONSE_CODES = new Set(['HPE_INVALID_CONSTANT', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'UND_ERR_RES_EXCEEDED_MAX_SIZE', 'UND_ERR_INFO']);

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
    if (typeof code === 'string') {
      const causeCode = (current as { cause?: { code?: unknown } }).cause?.code;
      return typeof causeCode === 'string' ? causeCode : code;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export function classifyUpstreamError(error: unknown): UpstreamFailure {
  const code = errorCode(error) ?? '';
  const detail = code || (error instanceof Error ? error.name : 'unknown');
  if (CONNECT_CODES.has(code) || isTlsHandshakeCode(code)) return { kind: 'connect', detail };
  if (HEADERS_TIMEOUT_CODES.has(code)) return { kind: 'headers_timeout', detail };
  if (IDLE_TIMEOUT_CODES.has(code)) return { kind: 'idle_timeout', detail };
  if (RESET_CODES.has(code)) return { kind: 'reset', detail };
  if (BAD_RESPONSE_CODES.has(code) || code.startsWith('HPE_')) return { kind: 'bad_response', detail };
  return { kind: 'reset', detail };
}

/** Seconds a client should wait before retrying after the agent was unavailable. */
export const AGENT_RETRY_AFTER_SECONDS = 2;
