// Starts a server listening and resolves with the port it got (port 0 picks a free one).
// `reusePort`: SO_REUSEPORT (listen.reuse_port), so several gateway processes can listen on
// one port and the kernel spreads new connections over them; config/reuse-port-support.ts
// has refused it already where Node or the platform cannot do it.
import type { AddressInfo, Server } from 'node:net';

export function listen(server: Server, port: number, host: string, options: { reusePort?: boolean } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.reusePort === true ? { port, host, reusePort: true } : { port, host }, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
