import { connect, createServer } from 'node:net';

/** A port the OS says is free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
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
export async function refusingPort(): Promise<number> {
  for (let port = 1; port < 1024; port += 1) {
    if (await refuses(port)) return port;
  }
  throw new Error('no port below 1024 refuses connections on 127.0.0.1');
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}
