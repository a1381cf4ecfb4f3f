// The client's address, and the X-Forwarded-For the upstream gets. A client-sent
// X-Forwarded-For is believed only with `listen.trust_proxy: true` (a proxy in front sets it).
import type { IncomingMessage } from 'node:http';

export interface ClientAddress {
  clientIp: string;
  forwardedFor: string;
}

function normalise(address: string | undefined): string {
  if (!address) return 'unknown';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

export function clientAddress(req: IncomingMessage, trustProxy: boolean): ClientAddress {
  const peer = normalise(req.socket.remoteAddress);
  const incoming = req.headers['x-forwarded-for'];
  if (!trustProxy || typeof incoming !== 'string' || incoming.length === 0) return { clientIp: peer, forwardedFor: peer };
  const first = incoming.split(',', 1)[0]!.trim();
  return { clientIp: first || peer, forwardedFor: `${incoming}, ${peer}` };
}
