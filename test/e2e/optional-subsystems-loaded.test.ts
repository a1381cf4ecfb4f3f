// A feature that is off loads nothing (docs/performance.md, "A feature that is off loads
// nothing"): the built CLI's `serve`, with a preload that records every module the process
// resolves (test/helpers/loaded-modules-preload.mjs). With none of the optional subsystems
// configured, none of their modules is loaded; with each one turned on, that one is. What is
// compared is module URLs, never memory or time.
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../helpers/gateway-process.js';
import { dropTable, POSTGRES_URL, uniqueTable } from '../helpers/postgres.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

const PRELOAD = join(process.cwd(), 'test/helpers/loaded-modules-preload.mjs');

/** Each optional subsystem, by a module only it loads (a package's path or one of dist/'s files). */
const SUBSYSTEM_MODULES = {
  telemetry: ['/node_modules/@opentelemetry/sdk-trace-base/', '/node_modules/@opentelemetry/exporter-trace-otlp-http/', '/dist/telemetry/open-tracing.js'],
  postgres: ['/node_modules/pg/'],
  webhooks: ['/dist/notifications/notifications-on.js', '/dist/notifications/webhook-delivery.js', '/dist/notifications/webhook-sender.js'],
  a2a: ['/dist/proxy/a2a/a2a-cards.js', '/dist/proxy/a2a/a2a-exchange.js', '/dist/proxy/a2a/a2a-relay.js'],
  // Embedded mode (no redis block) loads no Redis client.
  redis: ['/node_modules/ioredis/', '/dist/redis/redis-client.js', '/dist/redis/redis-topology.js'],
  mcp: ['/dist/mcp/open-mcp-front-door.js', '/dist/mcp/mcp-front-door.js', '/dist/mcp/mcp-session-store.js', '/dist/mcp/mcp-forward.js'],
} as const;
/** The stdio MCP transport: loaded only when a stdio server is configured (an MCP front door of Streamable HTTP servers loads none of it). */
const STDIO_MODULES = ['/dist/mcp/stdio-transport.js', '/dist/mcp/stdio-session.js', '/dist/mcp/stdio-child.js'];
/** Loaded by no `serve` at all (the gateway speaks MCP over plain HTTP): a test and tooling dependency only. */
const NEVER_LOADED = ['/node_modules/@modelcontextprotocol/sdk/'];
type Subsystem = keyof typeof SUBSYSTEM_MODULES;

let dir: string;
let redis: TestRedis;
const table = uniqueTable('loaded_modules');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'agentgw-loaded-'));
  redis = await startRedis();
});

afterAll(async () => {
  await dropTable(table);
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

function baseConfig(name: string): Record<string, unknown> {
  return {
    // No request is sent: the runner's address is never dialled.
    agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' } },
    keys: { file: join(dir, `${name}-keys.json`) },
    audit: { file: join(dir, `${name}-audit.jsonl`), spool: join(dir, `${name}-spool.jsonl`), usage_dir: join(dir, `${name}-usage`), admin_file: join(dir, `${name}-admin.jsonl`) },
    log: { level: 'warn' },
    shutdown_grace: '1s',
  };
}

const TURNED_ON: Record<Subsystem, (name: string) => Record<string, unknown>> = {
  // A collector nobody listens on: the exporter is built at start whether or not it is reachable.
  telemetry: () => ({ telemetry: { otlp_endpoint: 'http://127.0.0.1:9' } }),
  postgres: (name) => ({ audit: { ...(baseConfig(name).audit as object), postgres: { url: POSTGRES_URL, table } } }),
  // An A2A agent whose card cannot be read: the adapter is loaded to read it all the same.
  a2a: () => ({ agents: { support: { upstream: 'http://127.0.0.1:9/api/v1' }, travel: { upstream: 'http://127.0.0.1:9/a2a', protocol: 'a2a', timeout: '2s' } } }),
  redis: () => ({ redis: { url: redis.url, prefix: `agentgw-loaded-${process.pid}:` } }),
  // A server nobody listens on: the front door is built at start and dials nothing until a request.
  mcp: () => ({ mcp_servers: { files: { upstream: 'http://127.0.0.1:9/mcp' } } }),
  webhooks: (name) => ({ notifications: { dir: join(dir, `${name}-outbox`), webhooks: [{ url: 'http://127.0.0.1:9/hook', secret: 'loaded-modules-test-secret', events: ['*'] }] } }),
};

/** Starts `serve` with the preload, stops it with SIGTERM, and returns the URLs its process resolved. */
async function modulesLoadedBy(name: string, config: Record<string, unknown>): Promise<string[]> {
  const out = join(dir, `${name}-modules`);
  await mkdir(out);
  // OTEL_EXPORTER_OTLP_ENDPOINT would turn telemetry on from the environment (docs/observability.md).
  const env = { AGENTGW_LOADED_MODULES_DIR: out, OTEL_EXPORTER_OTLP_ENDPOINT: '' };
  const gateway = await startGatewayProcess(dir, name, config, env, { nodeArgs: ['--import', PRELOAD], startTimeoutMs: 60_000 });
  const exit = await gateway.stop('SIGTERM');
  expect(exit.code, gateway.output()).toBe(0);
  const files = await readdir(out);
  expect(files).toHaveLength(1);
  return (await readFile(join(out, files[0]!), 'utf8')).split('\n').filter(Boolean);
}

function loads(urls: string[], subsystem: Subsystem): string[] {
  return SUBSYSTEM_MODULES[subsystem].filter((part) => urls.some((url) => url.includes(part)));
}

describe('optional subsystems are loaded only when the config turns them on', () => {
  it('a gateway with none of them configured loads none of their modules', async () => {
    const urls = await modulesLoadedBy('none', baseConfig('none'));
    // The record is taken: the gateway's own modules and a package it always imports (the
    // metrics' prom-client, a CommonJS entry as pg is) are in it.
    expect(urls.some((url) => url.endsWith('/dist/gateway.js'))).toBe(true);
    expect(urls.some((url) => url.includes('/node_modules/prom-client/'))).toBe(true);
    for (const subsystem of Object.keys(SUBSYSTEM_MODULES) as Subsystem[]) expect(loads(urls, subsystem), subsystem).toEqual([]);
    // Nothing under dist/mcp/ at all, not only the files named above.
    expect(urls.filter((url) => url.includes('/dist/mcp/'))).toEqual([]);
    expect(urls.filter((url) => NEVER_LOADED.some((part) => url.includes(part)))).toEqual([]);
  }, 120_000);

  it('an MCP front door loads the stdio transport only when a stdio server is configured', async () => {
    const httpOnly = await modulesLoadedBy('mcp-http', { ...baseConfig('mcp-http'), mcp_servers: { files: { upstream: 'http://127.0.0.1:9/mcp' } } });
    expect(loads(httpOnly, 'mcp')).toEqual([...SUBSYSTEM_MODULES.mcp]);
    expect(STDIO_MODULES.filter((part) => httpOnly.some((url) => url.includes(part)))).toEqual([]);
    // A stdio server: its transport is loaded at start; no child is started before an initialize.
    const stdio = await modulesLoadedBy('mcp-stdio', { ...baseConfig('mcp-stdio'), mcp_servers: { tools: { command: [process.execPath, '--version'] } } });
    expect(STDIO_MODULES.filter((part) => stdio.some((url) => url.includes(part)))).toEqual(STDIO_MODULES);
    expect(stdio.filter((url) => NEVER_LOADED.some((part) => url.includes(part)))).toEqual([]);
  }, 120_000);

  for (const subsystem of Object.keys(TURNED_ON) as Subsystem[]) {
    it(`with ${subsystem} turned on, its modules are loaded and the others' are not`, async () => {
      const name = `only-${subsystem}`;
      const urls = await modulesLoadedBy(name, { ...baseConfig(name), ...TURNED_ON[subsystem](name) });
      expect(loads(urls, subsystem)).toEqual([...SUBSYSTEM_MODULES[subsystem]]);
      for (const other of Object.keys(SUBSYSTEM_MODULES) as Subsystem[]) if (other !== subsystem) expect(loads(urls, other), other).toEqual([]);
      expect(urls.filter((url) => NEVER_LOADED.some((part) => url.includes(part)))).toEqual([]);
    }, 120_000);
  }
});
