// A port nobody listens on right now, for children that need one on their command line.
import { createServer } from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on host:port, or rejects after timeoutMs. */
export async function waitForPort(port, host = '127.0.0.1', timeoutMs = 10_000) {
  const { connect } = await import('node:net');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const socket = connect(port, host);
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
