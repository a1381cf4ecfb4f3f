// A local OTLP/HTTP collector stand-in for the bench's `telemetry-on` variation: it reads each
// export request to its end and answers 200, so the gateway pays for building, batching and
// sending its spans as it would to a real collector on the same host.
import { createServer } from 'node:http';

/** @returns {Promise<{ url: string, requests: () => number, bytes: () => number, close: () => Promise<void> }>} */
export async function startOtlpSink() {
  let requests = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    requests += 1;
    req.on('data', (chunk) => (bytes += chunk.length));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    bytes: () => bytes,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
