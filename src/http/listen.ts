// Starts a server listening and resolves with the port it got (port 0 picks a free one).
import type { AddressInfo, Server } from 'node:net';

export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
