// Where the fastify peer finds a bearer token's record in Redis: shared by the peer
// (bench/peers/fastify-gateway.mjs) and the bench that writes the record (bench/lib/peers.mjs).
import { createHash } from 'node:crypto';

/** The Redis key of a raw bearer token's record: the token itself is never stored. */
export function peerKeyName(prefix, rawToken) {
  return `${prefix}peer-key:${createHash('sha256').update(rawToken).digest('hex')}`;
}
