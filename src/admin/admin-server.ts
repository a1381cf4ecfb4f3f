// The admin listener (docs/design.md, "Operations"): /metrics, /healthz, /readyz, and
// /upstreamz (every agent's targets and their state, docs/upstreams.md) — never on the public port.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

export interface AdminOptions {
  /** Prometheus text of this process, or of every worker when clustered. */
  metricsText(): Promise<{ contentType: string; body: string }>;
  /** Whether this instance should receive traffic: store reachable (or embedded), not draining. */
  readiness(): Promise<{ ready: boolean; reason?: string }>;
  /** Every agent's upstream targets and their state (GET /upstreamz); absent: 404. */
  upstreams?(): unknown;
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
    const path = (req.url ?? '/').split('?', 1)[0];
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
