// Ports on 127.0.0.1 for processes that need one on their command line: the one copy the tests
// (test/helpers/free-port.ts), the bench (bench/lib) and the scripts here share.
import { connect, createServer } from 'node:net';

/** A port the OS says is free right now on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A port on 127.0.0.1 that refuses connections and stays that way: one below 1024, which
 * the OS never hands out for port 0 (where every test server here gets its port). A port
 * that freePort() found free would not do: a server started meanwhile by a test running in
 * parallel can be given it, and the "refused" runner then answers (a 404 seen in CI).
 */
export async function refusingPort() {
  for (let port = 1; port < 1024; port += 1) {
    if (await refuses(port)) return port;
  }
  throw new Error('no port below 1024 refuses connections on 127.0.0.1');
}

/** Resolves once something accepts TCP connections on host:port, or rejects after timeoutMs. */
export async function waitForPort(port, host = '127.0.0.1', timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await accepts(port, host))) {
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function refuses(port) {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error) => resolve(error.code === 'ECONNREFUSED'));
  });
}

function accepts(port, host) {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
