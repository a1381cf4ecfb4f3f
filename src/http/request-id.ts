// X-Request-Id: the client's own id when it is sane (so its logs join ours), else a UUID.
import { randomUUID } from 'node:crypto';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;
/** A raw API key sent as the request id would be echoed, logged, audited and forwarded: never take it. */
const CONTAINS_API_KEY = /ha_[0-9A-Za-z]{38}/;

export function chooseRequestId(fromClient: string | string[] | undefined): string {
  if (typeof fromClient === 'string' && SANE_REQUEST_ID.test(fromClient) && !CONTAINS_API_KEY.test(fromClient)) return fromClient;
  return randomUUID();
}
