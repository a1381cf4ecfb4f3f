// A TCP relay on a fixed loopback port in front of a real server (PostgreSQL here), which a
// test takes down and brings back: down, connections to its port are refused and the ones
// open are cut, exactly what a client sees when the server goes away; up again on the same
// port, the server is reachable as before.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Connections accepted so far. */
  connections: number;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const state = { connections: 0 };
  let server: Server | undefined;
  let port = 0;

  const listen = async (): Promise<void> => {
    const next = createServer((client) => {
      state.connections += 1;
      const upstream = connect({ host: targetHost, port: targetPort });
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      next.once('error', reject);
      next.listen(port, '127.0.0.1', resolve);
    });
    const address = next.address();
    port = typeof address === 'object' && address ? address.port : port;
    server = next;
  };

  const down = async (): Promise<void> => {
    const current = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (current) await new Promise<void>((resolve) => current.close(() => resolve()));
  };

  await listen();
  return {
    get port() {
      return port;
    },
    get connections() {
      return state.connections;
    },
    down,
    up: listen,
    close: down,
  };
}
