// The client's address, and the X-Forwarded-For the upstream gets (docs/security.md).
// Without `listen.trust_proxy` the client is the peer and a client-sent X-Forwarded-For is
// ignored. With it, the chain is read from the right, the end our own proxies wrote: each
// trusted proxy is skipped, and the first address that is not one is the client. Entries
// further left were written by the client and are never believed (nor forwarded).
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { unmapIPv4, type TrustProxy } from '../config/trust-proxy.js';

export interface ClientAddress {
  clientIp: string;
  forwardedFor: string;
}

function normalise(address: string | undefined): string {
  if (!address) return 'unknown';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

export function clientAddress(req: IncomingMessage, trust: TrustProxy): ClientAddress {
  const peer = normalise(req.socket.remoteAddress);
  if (trust.mode === 'none') return { clientIp: peer, forwardedFor: peer };
  const incoming = req.headers['x-forwarded-for'];
  if (typeof incoming !== 'string' || incoming.length === 0) return { clientIp: peer, forwardedFor: peer };
  return fromForwardedChain(peer, incoming, trust);
}

/** An X-Forwarded-For entry as a bare address ("[::1]:443" and "192.0.2.1:80" lose the port), or undefined when it is not one. */
export function entryAddress(entry: string): string | undefined {
  let text = entry.trim();
  if (text.charCodeAt(0) === 0x5b) {
    const close = text.indexOf(']');
    if (close === -1) return undefined;
    text = text.slice(1, close);
  } else if (text.indexOf(':') !== -1 && text.indexOf(':') === text.lastIndexOf(':')) {
    text = text.slice(0, text.indexOf(':'));
  }
  const address = unmapIPv4(text);
  return isIP(address) === 0 ? undefined : address;
}

function isTrusted(trust: TrustProxy & { mode: 'list' }, address: string): boolean {
  const family = isIP(address);
  return family !== 0 && trust.proxies.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * The client in a chain `entries…, peer`. With a hop count n, the peer and the n - 1 entries
 * nearest it are our proxies, so the client is entry n from the right; with a list, the
 * peer must be on it (else the header is ignored) and the client is the rightmost entry
 * that is not. An entry that is not an address ends the walk: the client is then the last
 * address to its right, which a trusted proxy wrote. A chain made only of trusted proxies
 * yields its leftmost address. Only the believed part of the chain is forwarded.
 */
function fromForwardedChain(peer: string, incoming: string, trust: TrustProxy & { mode: 'hops' | 'list' }): ClientAddress {
  const entries = incoming.split(',');
  let client = peer;
  // The believed part of the chain, left to right, without the peer.
  let believed = '';
  // `client` is hop `taken` from the right (0: the peer); go one further while it is trusted.
  let taken = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    if (trust.mode === 'hops' ? taken >= trust.hops : !isTrusted(trust, client)) break;
    const address = entryAddress(entries[i]!);
    if (address === undefined) break;
    client = address;
    believed = believed === '' ? address : `${address}, ${believed}`;
    taken += 1;
  }
  return { clientIp: client, forwardedFor: believed === '' ? peer : `${believed}, ${peer}` };
}
