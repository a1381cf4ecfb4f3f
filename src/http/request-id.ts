// The X-Request-Id of an answer written before a request has its RequestState (which makes
// a request's ids, src/request/request-ids.ts).
import { newRequestId, saneClientRequestId } from '../request/request-ids.js';

export function chooseRequestId(fromClient: string | string[] | undefined): string {
  return saneClientRequestId(fromClient) ?? newRequestId(Date.now());
}
