// An HTTP proxy that adds headers to every request it forwards, streaming both ways: for a
// client that cannot send an API key itself (the MCP conformance CLI) to reach the gateway.
// It listens before it knows its target (forwardTo), so the gateway it fronts can be
// configured with the proxy's own address (an allowed Origin).
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeaderProxy {
  url: string;
  /** Where requests go from now on, and the headers added to each. */
  forwardTo(target: string, headers: Record<string, string>): void;
  close(): Promise<void>;
}

export async function startHeaderProxy(target?: string, headers: Record<string, string> = {}): Promise<HeaderProxy> {
  let route = target === undefined ? undefined : { origin: new URL(target), headers };
  const server: Server = createServer((req, res) => {
    if (route === undefined) {
      res.writeHead(503).end('the proxy has no target yet');
      return;
    }
    const { origin, headers: added } = route;
    const upstream = request(
      { host: origin.hostname, port: origin.port, method: req.method, path: req.url, headers: { ...req.headers, host: origin.host, ...added } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwardTo(next, nextHeaders) {
      route = { origin: new URL(next), headers: nextHeaders };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
