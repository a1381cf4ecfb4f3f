// An HTTP proxy that adds headers to every request it forwards, streaming both ways: for a
// client that cannot send an API key itself (the MCP conformance CLI) to reach the gateway.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeaderProxy {
  url: string;
  close(): Promise<void>;
}

export async function startHeaderProxy(target: string, headers: Record<string, string>): Promise<HeaderProxy> {
  const origin = new URL(target);
  const server: Server = createServer((req, res) => {
    const upstream = request(
      { host: origin.hostname, port: origin.port, method: req.method, path: req.url, headers: { ...req.headers, host: origin.host, ...headers } },
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
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
