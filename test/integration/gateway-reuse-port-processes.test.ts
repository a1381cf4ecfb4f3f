// listen.reuse_port: two standalone gateway PROCESSES (no cluster primary) listening on one
// port, on one Redis, one runner behind both. Connections to the one port reach both (each
// process's own agentgw_requests_total shows what it served), and a plan's limit is exact
// across them, as for any instances sharing a Redis. `serve --workers` refuses reuse_port.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runBuiltCli } from '../helpers/cli.js';
import { answerChat } from '../helpers/fake-upstream.js';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { useSharedRedisGateways } from '../helpers/shared-redis-gateways.js';

const LIMIT = 30;
const shared = useSharedRedisGateways({
  prefix: 'gwreuseport:',
  plans: { open: { windows: [{ requests: 100000, per: '1m' }] }, capped: { windows: [{ requests: LIMIT, per: '1m' }] } },
  upstream: answerChat('hi', 1),
  connections: 8,
  // Leases off: with them (the default) one process may refuse while the other still holds
  // leased units (docs/rate-limits.md "Leases"), so fewer than the limit can be admitted;
  // without them Redis counts each request and the limit is met exactly.
  extraConfig: { listen: { reuse_port: true }, rate_limits: { lease: false } },
  samePort: true,
});

/** One POST /chat on a connection of its own: the kernel picks the process per connection. */
async function postOnNewConnection(url: string, key: string): Promise<number> {
  const client = new Client(url);
  try {
    const response = await client.request({
      path: '/agents/support/api/v1/chat',
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"message":"hi"}',
    });
    await response.body.text();
    return response.statusCode;
  } finally {
    await client.close();
  }
}

/** The requests one process answered, by its own counter (its admin listener's /metrics). */
async function servedBy(gateway: GatewayProcess): Promise<number> {
  const text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
  return [...text.matchAll(/^agentgw_requests_total\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('two gateway processes on one port (listen.reuse_port)', () => {
  it('both listen on the one port and both serve connections made to it', async () => {
    const [a, b] = shared.gateways;
    expect(b!.port).toBe(a!.port);
    expect(b!.child.pid).not.toBe(a!.child.pid);
    const key = await shared.createKey('acct-open', 'open');
    const [beforeA, beforeB] = [await servedBy(a!), await servedBy(b!)];
    // 64 connections from 64 source ports: the kernel's hash sends them all to one of two
    // sockets with probability 2^-63.
    const statuses = await Promise.all(Array.from({ length: 64 }, () => postOnNewConnection(a!.url, key)));
    expect(statuses.every((s) => s === 200)).toBe(true);
    const [servedA, servedB] = [(await servedBy(a!)) - beforeA, (await servedBy(b!)) - beforeB];
    expect(servedA).toBeGreaterThan(0);
    expect(servedB).toBeGreaterThan(0);
    expect(servedA + servedB).toBe(64);
  });

  it('holds a plan limit exactly across the two processes behind the one port', async () => {
    const [a, b] = shared.gateways;
    const key = await shared.createKey('acct-capped', 'capped');
    const [beforeA, beforeB] = [await servedBy(a!), await servedBy(b!)];
    const statuses = await Promise.all(Array.from({ length: LIMIT + 20 }, () => postOnNewConnection(a!.url, key)));
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    expect((await servedBy(a!)) - beforeA).toBeGreaterThan(0);
    expect((await servedBy(b!)) - beforeB).toBeGreaterThan(0);
  });

  it('is refused with serve --workers, with the reason', async () => {
    const configPath = join(shared.dir, 'workers.yaml');
    await writeFile(configPath, stringify({ ...shared.config('workers'), listen: { host: '127.0.0.1', port: 0, reuse_port: true }, admin: { host: '127.0.0.1', port: 0 } }));
    const failed = await runBuiltCli(['serve', '--config', configPath, '--workers', '2']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/listen\.reuse_port .* cannot be combined with serve --workers/);
  });
});
