// X-Request-Id: the client's own id when it is sane (so its logs join ours), else a UUID.
import { randomUUID } from 'node:crypto';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

export function chooseRequestId(fromClient: string | string[] | undefined): string {
  if (typeof fromClient === 'string' && SANE_REQUEST_ID.test(fromClient)) return fromClient;
  return randomUUID();
}
