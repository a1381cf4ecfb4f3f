// The admin listener (docs/operations.md, docs/admin-api.md): /metrics, /healthz, /readyz and
// /upstreamz (every agent's targets and their state, docs/upstreams.md) — never on the public
// port — and, when given, the admin API, its OpenAPI documents and the dashboard paths.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from '../node-http.js';
import type { Registry } from 'prom-client';
import { isAdminApiPath } from './admin-api.js';

export interface AdminOptions {
  /** Prometheus text of this process, or of every worker when clustered. */
  metricsText(): Promise<{ contentType: string; body: string }>;
  /** Whether this instance should receive traffic: store reachable (or embedded), not draining. */
  readiness(): Promise<{ ready: boolean; reason?: string }>;
  /** /admin/v1/*, /openapi/*, /dashboard (admin-api.ts); those paths are 404 without it. */
  api?: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;
  /** Every agent's upstream targets and their state (GET /upstreamz); absent: 404. */
  upstreams?(): unknown;
  /** admin.hosts of the running config: when not empty, the only names accepted in `Host`. */
  hosts?(): readonly string[];
}

/** The host name of a Host header, lower-cased, without its port (IPv6 literals keep their brackets). */
function hostName(host: string | undefined): string {
  if (host === undefined) return '';
  const lower = host.toLowerCase();
  const colon = lower.lastIndexOf(':');
  return colon > lower.lastIndexOf(']') ? lower.slice(0, colon) : lower;
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
  res.end(body);
}

export function registryMetrics(registry: Registry): AdminOptions['metricsText'] {
  return async () => ({ contentType: registry.contentType, body: await registry.metrics() });
}

export function createAdminServer(options: AdminOptions): Server {
  return createServer(async (req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://admin');
    } catch {
      return send(res, 400, 'text/plain', 'bad request\n');
    }
    const hosts = options.hosts?.() ?? [];
    if (hosts.length > 0 && !hosts.includes(hostName(req.headers.host))) return send(res, 421, 'text/plain', 'misdirected request: this admin listener does not serve that Host\n');
    const path = url.pathname;
    if (options.api && isAdminApiPath(path)) return options.api(req, res, url);
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'GET only\n');
    try {
      if (path === '/metrics') {
        const { contentType, body } = await options.metricsText();
        return send(res, 200, contentType, body);
      }
      if (path === '/healthz') return send(res, 200, 'application/json', '{"status":"ok"}\n');
      if (path === '/readyz') {
        const { ready, reason } = await options.readiness();
        return send(res, ready ? 200 : 503, 'application/json', `${JSON.stringify({ status: ready ? 'ready' : 'not_ready', ...(reason ? { reason } : {}) })}\n`);
      }
      if (path === '/upstreamz' && options.upstreams) return send(res, 200, 'application/json', `${JSON.stringify({ agents: options.upstreams() })}\n`);
      return send(res, 404, 'text/plain', 'not found\n');
    } catch {
      return send(res, 500, 'text/plain', 'admin error\n');
    }
  });
}
