import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool, type Dispatcher } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clientWithoutAbortReconnect } from '../../../src/proxy/no-reconnect-after-abort.js';

const STREAMS = 5;

// An upstream that answers every request with an event stream it never ends.
let server: Server;
let origin: string;
let connections = 0;

beforeEach(async () => {
  connections = 0;
  server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
  });
  server.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Opens `count` streams and resolves with their controllers once each has its headers. */
function openStreams(pool: Pool, count: number): Promise<Dispatcher.DispatchController[]> {
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Dispatcher.DispatchController>((resolve, reject) => {
          pool.dispatch(
            { method: 'POST', path: '/chat/stream', body: '{}' },
            {
              onRequestStart: () => {},
              onResponseStart: (controller) => resolve(controller),
              onResponseData: () => {},
              onResponseEnd: () => reject(new Error('the stream ended')),
              onResponseError: (_controller, error) => reject(error),
            },
          );
        }),
    ),
  );
}

async function abortAllAndSettle(controllers: Dispatcher.DispatchController[]): Promise<void> {
  const reason = new Error('client closed');
  for (const controller of controllers) controller.abort(reason);
  await new Promise((resolve) => setTimeout(resolve, 200));
}

describe('clientWithoutAbortReconnect', () => {
  it('undici alone opens a new connection for every aborted stream (remove the workaround once this fails)', async () => {
    const pool = new Pool(origin, { connections: null, pipelining: 1 });
    try {
      await abortAllAndSettle(await openStreams(pool, STREAMS));
      expect(connections).toBe(2 * STREAMS);
    } finally {
      await pool.destroy();
    }
  });

  it('opens no connection after aborts, and later requests still get connections', async () => {
    const pool = new Pool(origin, { connections: null, pipelining: 1, factory: clientWithoutAbortReconnect });
    try {
      await abortAllAndSettle(await openStreams(pool, STREAMS));
      expect(connections).toBe(STREAMS);
      expect(pool.stats.connected).toBe(0);

      const again = await openStreams(pool, STREAMS);
      expect(again).toHaveLength(STREAMS);
      expect(connections).toBe(2 * STREAMS);
      await abortAllAndSettle(again);
      expect(connections).toBe(2 * STREAMS);
    } finally {
      await pool.destroy();
    }
  });

  it('keeps the connection of a stream that ended normally for the next request', async () => {
    server.removeAllListeners('request');
    server.on('request', (req, res) => {
      req.resume();
      req.once('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
        res.end('{}');
      });
    });
    // One connection, so a new one could only come from the factory closing or refusing it.
    const pool = new Pool(origin, { connections: 1, pipelining: 1, factory: clientWithoutAbortReconnect });
    try {
      for (let i = 0; i < 3; i += 1) {
        const res = await pool.request({ method: 'POST', path: '/chat', body: '{}' });
        await res.body.text();
      }
      expect(connections).toBe(1);
    } finally {
      await pool.destroy();
    }
  });
});
