// X-Request-Id: the client's own id when it is sane (so its logs join ours), else a UUID.
// A raw API key sent as the request id would be echoed, logged, audited and forwarded: never take it.
import { randomUUID } from 'node:crypto';
import { containsApiKey } from '../keys/key-format.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

export function chooseRequestId(fromClient: string | string[] | undefined): string {
  if (typeof fromClient === 'string' && SANE_REQUEST_ID.test(fromClient) && !containsApiKey(fromClient)) return fromClient;
  return randomUUID();
}
