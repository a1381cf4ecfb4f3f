// Security sweeps over everything a fault run left behind: the raw key must appear nowhere
// (logs, audit records, what the runner saw, Redis keys and values), and error bodies must
// carry no stack traces or internal addresses.

/** Where each secret occurs in each text: an empty list is the passing answer. */
export function findSecrets(texts: Record<string, string>, secrets: readonly string[]): string[] {
  const found: string[] = [];
  for (const [where, text] of Object.entries(texts)) {
    for (const secret of secrets) {
      // The key and its 32-character secret part alone.
      for (const needle of [secret, secret.slice(3, 35)]) if (text.includes(needle)) found.push(`${where} contains ${needle.slice(0, 8)}…`);
    }
  }
  return found;
}

const REVEALING = [
  { what: 'a stack frame', pattern: /\bat [\w.<>]+ \(|\bat (?:file:|node:|\/)/ },
  { what: 'a source path', pattern: /\/work\/|\/src\/|\/dist\/|node_modules|\.[cm]?[jt]s:\d+/ },
  { what: 'a system error code', pattern: /\bE[A-Z]{3,}\b|UND_ERR/ },
  { what: 'an error class name', pattern: /\b(?:TypeError|RangeError|ReferenceError|AbortError|SocketError)\b/ },
  { what: 'a redis:// URL', pattern: /redis:\/\// },
];

/**
 * Problems in the error bodies the gateway wrote itself (the runner's own bodies pass through
 * and are the runner's business): stack traces, paths, error codes, internal host:port pairs.
 */
export function revealingErrorBodies(bodies: readonly string[], internalAddresses: readonly string[]): string[] {
  const problems = new Set<string>();
  for (const body of bodies) {
    for (const { what, pattern } of REVEALING) if (pattern.test(body)) problems.add(`${what} in ${body.slice(0, 200)}`);
    for (const address of internalAddresses) if (body.includes(address)) problems.add(`internal address ${address} in ${body.slice(0, 200)}`);
  }
  return [...problems];
}
