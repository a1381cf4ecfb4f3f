// Holds many idle TCP connections to a server: connects them (a few hundred at a time, so the
// listen backlog is not flooded) and never sends a byte. Runs in its own process so its
// `ulimit -n` can be raised without touching the test runner's.
//   node idle-clients.mjs <port> <count>
// Prints JSON lines on stdout: {"opened":N,"open":N,"ms":T} once all are connected, then
// {"open":N,"closed":N,"answered408":N} every 250 ms until all are closed by the server.
import { connect } from 'node:net';

const [port, count] = process.argv.slice(2).map(Number);
const BATCH = 250;
const started = performance.now();
let opened = 0;
let open = 0;
let closed = 0;
let answered408 = 0;
let failed = 0;
const sockets = new Set();

function openOne() {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let first = true;
    socket.on('connect', () => {
      opened += 1;
      open += 1;
      sockets.add(socket);
      resolve();
    });
    socket.on('data', (chunk) => {
      if (first && chunk.toString('latin1').startsWith('HTTP/1.1 408')) answered408 += 1;
      first = false;
    });
    socket.on('error', () => {
      if (!sockets.has(socket)) {
        failed += 1;
        resolve();
      }
    });
    socket.on('close', () => {
      if (!sockets.delete(socket)) return;
      open -= 1;
      closed += 1;
    });
  });
}

for (let i = 0; i < count; i += BATCH) {
  await Promise.all(Array.from({ length: Math.min(BATCH, count - i) }, openOne));
}
process.stdout.write(`${JSON.stringify({ opened, open, failed, ms: Math.round(performance.now() - started) })}\n`);

const timer = setInterval(() => {
  process.stdout.write(`${JSON.stringify({ open, closed, answered408 })}\n`);
  if (open === 0) {
    clearInterval(timer);
    process.exit(0);
  }
}, 250);

process.on('SIGTERM', () => {
  for (const socket of sockets) socket.destroy();
  process.exit(0);
});
