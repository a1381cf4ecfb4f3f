// Starts a server listening and resolves with the port it got (port 0 picks a free one).
// `reusePort`: SO_REUSEPORT (listen.reuse_port), so several gateway processes can listen on
// one port and the kernel spreads new connections over them; config/reuse-port-support.ts
// has refused it already where Node or the platform cannot do it. A failure is a ListenError
// naming the listener, so the CLI can say which setting picks its port.
import type { AddressInfo, Server } from 'node:net';

/** Which listener: the public gateway, the admin listener, or the demo agent of `serve --demo`. */
export type ListenerName = 'gateway' | 'admin' | 'demo agent';

export class ListenError extends Error {
  constructor(
    readonly listener: ListenerName,
    readonly host: string,
    readonly port: number,
    readonly code: string | undefined,
    cause: unknown,
  ) {
    super(`the ${listener} listener cannot listen on ${host}:${port}: ${code ?? (cause instanceof Error ? cause.message : String(cause))}`, { cause });
    this.name = 'ListenError';
  }
}

export function listen(server: Server, port: number, host: string, options: { reusePort?: boolean; listener?: ListenerName } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const fail = (error: NodeJS.ErrnoException) => reject(new ListenError(options.listener ?? 'gateway', host, port, error.code, error));
    server.once('error', fail);
    server.listen(options.reusePort === true ? { port, host, reusePort: true } : { port, host }, () => {
      server.off('error', fail);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
