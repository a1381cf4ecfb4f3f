// TLS to an agent's https:// runners (`agents.<id>.tls`, docs/upstreams.md "HTTPS runners"): a
// custom CA, a client certificate, the name to verify. The PEM files are read when the pools
// are built, at start and on every config reload (SIGHUP), never on the request path; a
// changed file gives the runner new pools (the old ones drain), a file that cannot be read
// refuses the reload before anything is swapped.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { AgentConfig } from '../config/schema.js';

/** What an undici Pool's `connect` takes, and a digest that changes when any of it does. */
export interface UpstreamTls {
  connect: ConnectionOptions;
  /** Part of the pool's identity: two agents share a pool only with the same TLS material. */
  digest: string;
}

/** The agent's TLS options with the files' current contents, or undefined without `tls`; throws naming the key and file. */
export function readUpstreamTls(agent: AgentConfig): UpstreamTls | undefined {
  const tls = agent.tls;
  if (tls === undefined) return undefined;
  const connect: ConnectionOptions = { rejectUnauthorized: tls.rejectUnauthorized };
  const hash = createHash('sha256').update(`${tls.rejectUnauthorized} ${tls.servername ?? ''}\n`);
  for (const field of ['ca', 'cert', 'key'] as const) {
    const path = tls[`${field}File`];
    if (path === undefined) continue;
    const pem = readPem(agent.id, field, path);
    connect[field] = pem;
    hash.update(`${field}\n`).update(pem);
  }
  if (tls.servername !== undefined) connect.servername = tls.servername;
  return { connect, digest: hash.digest('hex').slice(0, 16) };
}

function readPem(agentId: string, field: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(`agents.${agentId}.tls.${field}: cannot read ${path}: ${code}`, { cause: error });
  }
}
