// `listen.trust_proxy`: which peers' X-Forwarded-For the gateway believes (docs/security.md).
// Parsed once, when the config loads: a CIDR list becomes a net.BlockList that answers per
// request without any parsing.
import { BlockList, isIP } from 'node:net';

export type TrustProxy =
  /** Ignore X-Forwarded-For: the client is the peer. */
  | { readonly mode: 'none' }
  /** The peer and the `hops - 1` nearest X-Forwarded-For entries are our proxies. */
  | { readonly mode: 'hops'; readonly hops: number }
  /** Addresses in `proxies` are our proxies, wherever they appear in the chain. */
  | { readonly mode: 'list'; readonly proxies: BlockList; readonly entries: readonly string[] };

export const MAX_TRUSTED_HOPS = 32;

const EXPECTED = `expected false, true (one proxy in front), a number of proxy hops from 0 to ${MAX_TRUSTED_HOPS}, or a list of proxy addresses and CIDR ranges such as ["10.0.0.0/8", "192.168.1.7", "fd00::/8"]`;

/** An IPv4-mapped IPv6 address (::ffff:192.0.2.1) stands for its IPv4 address. */
export function unmapIPv4(address: string): string {
  return address.length > 7 && address.charCodeAt(0) === 0x3a && address.toLowerCase().startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** Adds one address or CIDR range to `list`; returns why not when it is neither. */
function addEntry(list: BlockList, entry: string): string | undefined {
  const slash = entry.indexOf('/');
  const address = unmapIPv4(slash === -1 ? entry : entry.slice(0, slash));
  const family = isIP(address);
  if (family === 0) return `${JSON.stringify(entry)} is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8)`;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (slash === -1) {
    list.addAddress(address, type);
    return undefined;
  }
  const prefixText = entry.slice(slash + 1);
  const prefix = Number(prefixText);
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefixText) || prefix > max) return `${JSON.stringify(entry)}: the prefix length after "/" must be 0 to ${max} for an IPv${family} range`;
  list.addSubnet(address, prefix, type);
  return undefined;
}

/** The setting as written in YAML → the parsed form, or the problems found. */
export function parseTrustProxy(value: unknown): { trust: TrustProxy } | { problems: string[] } {
  if (value === false || value === 0) return { trust: { mode: 'none' } };
  if (value === true) return { trust: { mode: 'hops', hops: 1 } };
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value > 0 && value <= MAX_TRUSTED_HOPS) return { trust: { mode: 'hops', hops: value } };
    return { problems: [`${value} is not a hop count; ${EXPECTED}`] };
  }
  if (Array.isArray(value)) {
    const proxies = new BlockList();
    const problems: string[] = [];
    const entries: string[] = [];
    value.forEach((entry, i) => {
      const problem = typeof entry === 'string' ? addEntry(proxies, entry.trim()) : `entry ${i} is ${JSON.stringify(entry)}, not a string`;
      if (problem) problems.push(problem);
      else entries.push((entry as string).trim());
    });
    if (problems.length > 0) return { problems };
    return { trust: entries.length === 0 ? { mode: 'none' } : { mode: 'list', proxies, entries } };
  }
  return { problems: [`got ${JSON.stringify(value)}; ${EXPECTED}`] };
}
