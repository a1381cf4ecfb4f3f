// A connection to "some node of the cluster", moving to the next one at every reconnect: what a
// classic pub/sub subscriber needs on Redis Cluster, where PUBLISH reaches every node (masters
// and replicas) over the cluster bus. It is a plain ioredis `Redis` with its own Connector, so
// it emits `ready` after every reconnect like a single-server connection does; the key store
// renews its subscription and clears its cache there (messages may have been missed). ioredis'
// own Cluster subscriber moves between nodes silently, which would hide exactly that moment.
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { AbstractConnector } from 'ioredis';

export interface ClusterNodeAddress {
  host: string;
  port: number;
}

/** ioredis' ConnectorConstructor: it hands the connection's options to the Connector. */
type ConnectorClass = new (options: unknown) => AbstractConnector;

/**
 * A Connector class for ioredis' `Connector` option. `candidates()` is asked at every
 * connection attempt (the seed nodes, plus the nodes the data connections currently know),
 * and the attempts go round them, so a dead node is left behind at the next reconnect.
 */
export function clusterNodeConnector(candidates: () => ClusterNodeAddress[], tls: ConnectionOptions | undefined): ConnectorClass {
  let next = 0;
  return class ClusterNodeConnector extends AbstractConnector {
    constructor(options: unknown) {
      super((options as { disconnectTimeout?: number }).disconnectTimeout ?? 2_000);
    }

    connect(): Promise<Socket | TLSSocket> {
      const nodes = candidates();
      const node = nodes[next % nodes.length]!;
      next = (next + 1) % Math.max(1, nodes.length);
      this.connecting = true;
      // As ioredis' StandaloneConnector: open the socket on the next tick, unless disconnect() came first.
      return new Promise((resolve, reject) => {
        process.nextTick(() => {
          if (!this.connecting) {
            reject(new Error('Connection is closed.'));
            return;
          }
          const stream = tls ? connectTls({ ...tls, host: node.host, port: node.port }) : connectTcp({ host: node.host, port: node.port });
          this.stream = stream;
          stream.once('error', (error: Error) => {
            this.firstError = error;
          });
          resolve(stream);
        });
      });
    }
  };
}
