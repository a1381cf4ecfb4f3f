// The floor a Node gateway stands on: node:http in front, one undici Pool behind, nothing
// else (no auth, no limits, no validation). Whatever the real gateway costs beyond this is
// its own overhead.
//
//   node bench/reference/bare-undici-proxy.mjs --upstream http://127.0.0.1:8081 [--port 0] [--api dispatch|stream-signal]
//     [--connections 128] [--reuse-port]
//   env: UPSTREAM, PORT, HOST, UNDICI_API, CONNECTIONS (0 = no cap), REUSE_PORT=1
//
// --connections 0 lifts the pool's cap, as scenario 4's floor needs (an SSE stream holds its
// upstream connection for its whole life); --reuse-port lets two of these processes share one
// port (bench/run.mjs idle-floor: the floor of two processes holding 10,000 streams).
//
// The request body is read into one Buffer and sent as bytes (the gateway has to hold the
// body anyway to validate it); the response is relayed by streaming, with the headers of an
// event stream flushed at once and the upstream request aborted as soon as the client goes.
import http from 'node:http';
import { Pool } from 'undici';
import { closeServer, hasFlag, isMainModule, listen, readOption } from './cli-args.mjs';

// Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection; undici also refuses some
// of them outright. host and content-length are recomputed for the upstream request.
const DROP_REQUEST_HEADERS = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer',
  'upgrade', 'host', 'content-length', 'expect',
]);
const DROP_RESPONSE_HEADERS = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade',
]);

function copyHeaders(headers, drop) {
  const out = {};
  for (const name in headers) {
    if (!drop.has(name)) out[name] = headers[name];
  }
  return out;
}

const BAD_GATEWAY_BODY = Buffer.from('{"error":{"type":"agent_unavailable","message":"upstream failed"}}');
const BAD_GATEWAY_HEADERS = { 'content-type': 'application/json', 'content-length': String(BAD_GATEWAY_BODY.length) };
// One shared reason: aborting is routine (every client that leaves), so no stack per abort.
const CLIENT_CLOSED = new Error('client closed the connection');

function isEventStream(headers) {
  const type = headers['content-type'];
  return typeof type === 'string' && type.startsWith('text/event-stream');
}

function answerUpstreamFailure(res) {
  if (!res.headersSent && !res.destroyed) {
    res.writeHead(502, BAD_GATEWAY_HEADERS);
    res.end(BAD_GATEWAY_BODY);
  } else {
    res.destroy();
  }
}

/**
 * undici dispatch handler that relays one upstream response into a ServerResponse. The
 * controller undici hands us is the cheapest way to abort: no AbortController per request
 * (pool.stream() with one measured ~1.5x this proxy's CPU per request; see
 * docs/decisions/0001-undici-for-upstream.md).
 */
class RelayHandler {
  constructor(res) {
    this.res = res;
    this.controller = null;
    this.resume = () => this.controller?.resume();
    // A client that leaves (before or after the upstream's headers) must not keep the
    // upstream generating tokens nobody reads.
    this.onClientClose = () => {
      if (!res.writableFinished) this.controller?.abort(CLIENT_CLOSED);
    };
    res.once('close', this.onClientClose);
  }

  onRequestStart(controller) {
    this.controller = controller;
    // The client may have left while the request waited for a pooled socket.
    if (this.res.destroyed) controller.abort(CLIENT_CLOSED);
  }

  onResponseStart(_controller, statusCode, headers) {
    if (statusCode < 200) return;
    this.res.writeHead(statusCode, copyHeaders(headers, DROP_RESPONSE_HEADERS));
    // node:http holds the headers until the first body write; an event stream whose first
    // event is seconds away must show the client its headers now.
    if (isEventStream(headers)) this.res.flushHeaders();
  }

  onResponseData(controller, chunk) {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', this.resume);
    }
  }

  onResponseEnd() {
    this.res.end();
  }

  onResponseError(_controller, _err) {
    answerUpstreamFailure(this.res);
  }
}

/**
 * @param {object} options
 * @param {string} options.upstream origin of the runner, e.g. http://127.0.0.1:8081
 * @param {number} [options.port] 0 = any free port
 * @param {string} [options.host]
 * @param {number | null} [options.connections] upper bound on pooled upstream sockets (null: none)
 * @param {boolean} [options.reusePort] listen with SO_REUSEPORT (Linux)
 * @param {'dispatch' | 'stream-signal'} [options.api] 'dispatch' (default) relays through a
 *   dispatch handler; 'stream-signal' uses pool.stream() with an AbortController per
 *   request, kept only so the measurement can show what that convenience costs.
 */
export async function startBareUndiciProxy(options) {
  const host = options.host ?? '127.0.0.1';
  const api = options.api ?? 'dispatch';
  const pool = new Pool(options.upstream, {
    connections: options.connections === undefined ? 128 : options.connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
  });
  const forward = api === 'stream-signal' ? forwardWithStream : forwardWithDispatch;

  const server = http.createServer((req, res) => {
    const chunks = [];
    let length = 0;
    req.on('data', (chunk) => {
      chunks.push(chunk);
      length += chunk.length;
    });
    req.once('end', () => {
      const body = length === 0 ? null : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length);
      forward(req, res, body);
    });
  });

  function forwardWithDispatch(req, res, body) {
    pool.dispatch(
      { path: req.url, method: req.method, headers: copyHeaders(req.headers, DROP_REQUEST_HEADERS), body },
      new RelayHandler(res),
    );
  }

  function forwardWithStream(req, res, body) {
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    pool.stream(
      {
        path: req.url,
        method: req.method,
        headers: copyHeaders(req.headers, DROP_REQUEST_HEADERS),
        body,
        signal: abort.signal,
      },
      ({ statusCode, headers }) => {
        res.writeHead(statusCode, copyHeaders(headers, DROP_RESPONSE_HEADERS));
        if (isEventStream(headers)) res.flushHeaders();
        return res;
      },
      (err) => {
        if (err) answerUpstreamFailure(res);
      },
    );
  }

  const port = await listen(server, options.port ?? 0, host, { reusePort: options.reusePort === true });
  return {
    server,
    port,
    url: `http://${host}:${port}`,
    close: async () => {
      await closeServer(server);
      await pool.close();
    },
  };
}

/** `0` means no cap (undici's `connections: null`). */
function connectionsOption(text) {
  const n = Number(text);
  return n === 0 ? null : n;
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  const upstream = readOption(argv, 'upstream', 'UPSTREAM');
  if (!upstream) {
    process.stderr.write('bare-undici-proxy: --upstream URL (or UPSTREAM) is required\n');
    process.exit(2);
  }
  const proxy = await startBareUndiciProxy({
    upstream,
    port: Number(readOption(argv, 'port', 'PORT', '0')),
    host: readOption(argv, 'host', 'HOST', '127.0.0.1'),
    api: readOption(argv, 'api', 'UNDICI_API', 'dispatch'),
    connections: connectionsOption(readOption(argv, 'connections', 'CONNECTIONS', '128')),
    reusePort: hasFlag(argv, 'reuse-port') || process.env.REUSE_PORT === '1',
  });
  process.stdout.write(`listening ${proxy.port}\n`);
  const stop = () => proxy.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
