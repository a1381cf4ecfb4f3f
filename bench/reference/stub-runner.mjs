// Agent runner stub: the upstream every proxy benchmark talks to. It answers as fast as
// node:http allows so the numbers measure the proxy, not the runner.
//
//   node bench/reference/stub-runner.mjs [--port 0] [--host 127.0.0.1]
//   env: PORT, HOST, STUB_SSE_TOKENS, STUB_SSE_INTERVAL_MS, STUB_SSE_FIRST_TOKEN_DELAY_MS
//
// POST /api/v1/chat         fixed chat response (docs/api.md, "Response"), keep-alive.
// POST /api/v1/chat/stream  SSE: `event: token` x tokens, then `event: done`. Query params
//                           override the env defaults per request: tokens, intervalMs,
//                           firstTokenDelayMs (after the headers are flushed) and
//                           headersDelayMs (before any header is sent).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { closeServer, isMainModule, listen, readOption } from './cli-args.mjs';

export const CHAT_RESPONSE = {
  response: 'Hello! I am the stub runner. How can I help you today?',
  tool_calls: [],
  metadata: { model: 'stub-runner-1', tokens_used: 14, latency_ms: 1 },
};

// Built once: the JSON route must cost the stub as little as possible per request.
const CHAT_BODY = Buffer.from(JSON.stringify(CHAT_RESPONSE));
const CHAT_HEADERS = {
  'content-type': 'application/json',
  'content-length': String(CHAT_BODY.length),
};
const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
};
const NOT_FOUND_BODY = Buffer.from('{"error":{"type":"not_found","message":"stub: no such route"}}');

function intOr(value, fallback) {
  if (value === null || value === undefined || value === '') return fallback;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? Math.floor(n) : fallback;
}

/**
 * @param {object} [options]
 * @param {number} [options.port] 0 = any free port
 * @param {string} [options.host]
 * @param {number} [options.sseTokens] default token count per stream
 * @param {number} [options.sseIntervalMs] default gap between tokens
 * @param {number} [options.sseFirstTokenDelayMs] default gap between headers and first token
 * @param {(event: {url: string, outcome: 'completed' | 'client_closed', tokensSent: number, tokens: number,
 *   startedAtMs: number, endedAtMs: number}) => void} [options.onStreamEnd]
 *   called once per SSE stream; times are performance.now() of this process, so an
 *   in-process caller can relate them to its own clock.
 * @param {(event: {url: string, atMs: number, headers: import('node:http').IncomingHttpHeaders}) => void} [options.onStreamRequest]
 */
export async function startStubRunner(options = {}) {
  const host = options.host ?? '127.0.0.1';
  const defaults = {
    tokens: options.sseTokens ?? intOr(process.env.STUB_SSE_TOKENS, 20),
    intervalMs: options.sseIntervalMs ?? intOr(process.env.STUB_SSE_INTERVAL_MS, 20),
    firstTokenDelayMs: options.sseFirstTokenDelayMs ?? intOr(process.env.STUB_SSE_FIRST_TOKEN_DELAY_MS, -1),
  };
  const onStreamEnd = options.onStreamEnd;
  const onStreamRequest = options.onStreamRequest;

  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (req.method === 'POST' && path === '/api/v1/chat') {
      // The body is drained, not parsed: the stub answers the same thing to everyone.
      req.resume();
      req.once('end', () => {
        res.writeHead(200, CHAT_HEADERS);
        res.end(CHAT_BODY);
      });
      return;
    }
    if (req.method === 'POST' && path === '/api/v1/chat/stream') {
      req.resume();
      req.once('end', () => stream(req, res, q === -1 ? null : new URLSearchParams(url.slice(q + 1))));
      return;
    }
    req.resume();
    res.writeHead(404, { 'content-type': 'application/json', 'content-length': String(NOT_FOUND_BODY.length) });
    res.end(NOT_FOUND_BODY);
  });
  // Longer than the proxies' pool idle timeouts, so the stub is never the side that
  // closes a pooled connection mid-benchmark.
  server.keepAliveTimeout = 65_000;

  function stream(req, res, params) {
    const startedAtMs = performance.now();
    onStreamRequest?.({ url: req.url, atMs: startedAtMs, headers: req.headers });
    const tokens = intOr(params?.get('tokens'), defaults.tokens);
    const intervalMs = intOr(params?.get('intervalMs'), defaults.intervalMs);
    const firstTokenDelayMs = intOr(
      params?.get('firstTokenDelayMs'),
      defaults.firstTokenDelayMs >= 0 ? defaults.firstTokenDelayMs : intervalMs,
    );
    const headersDelayMs = intOr(params?.get('headersDelayMs'), 0);
    let sent = 0;
    let timer = null;
    let reported = false;
    const report = (outcome) => {
      if (reported) return;
      reported = true;
      onStreamEnd?.({ url: req.url, outcome, tokensSent: sent, tokens, startedAtMs, endedAtMs: performance.now() });
    };
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      // writableEnded is false only if the connection went away before we called end().
      report(res.writableEnded ? 'completed' : 'client_closed');
    });

    const sendNext = () => {
      timer = null;
      if (res.destroyed) return;
      if (sent < tokens) {
        res.write(`event: token\ndata: {"content":"tok${sent} "}\n\n`);
        sent += 1;
        timer = setTimeout(sendNext, intervalMs);
        return;
      }
      const latencyMs = Math.round(performance.now() - startedAtMs);
      res.end(`event: done\ndata: {"tokens_used":${tokens},"latency_ms":${latencyMs}}\n\n`);
    };
    const sendHeaders = () => {
      timer = null;
      if (res.destroyed) return;
      res.writeHead(200, SSE_HEADERS);
      // A real runner sends headers before the model produces anything; flushHeaders makes
      // the stub do the same instead of waiting for the first write.
      res.flushHeaders();
      timer = setTimeout(sendNext, firstTokenDelayMs);
    };
    if (headersDelayMs > 0) timer = setTimeout(sendHeaders, headersDelayMs);
    else sendHeaders();
  }

  const port = await listen(server, options.port ?? 0, host);
  return {
    server,
    port,
    url: `http://${host}:${port}`,
    close: () => closeServer(server),
  };
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  const port = Number(readOption(argv, 'port', 'PORT', '0'));
  const host = readOption(argv, 'host', 'HOST', '127.0.0.1');
  const stub = await startStubRunner({ port, host });
  process.stdout.write(`listening ${stub.port}\n`);
  const stop = () => stub.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
