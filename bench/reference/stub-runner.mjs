// The agent runner stub every bench measurement and reference talks to, run as a child process
// (`listening <port>` on stdout). It answers as fast as node:http allows, so the numbers
// measure the proxy in front, not the runner; test/helpers/runner-process.ts runs it too.
//
//   node bench/reference/stub-runner.mjs [--port 0] [--host 127.0.0.1]
//
// POST /api/v1/chat         a fixed chat response (CHAT_RESPONSE, docs/api.md "Response"),
//                           built once, keep-alive.
// POST /api/v1/chat/stream  SSE: `event: token` × tokens, then `event: done`. Every token event
//                           carries its sequence number and the wall-clock time the stub wrote it
//                           (`sent_at`, performance.timeOrigin + performance.now(): ms with
//                           sub-ms precision), so a client on the same machine can tell how long
//                           each event took to reach it (scenario 3). `idle=1` holds a stream
//                           open, one token event every `eventEveryMs`, until the client goes
//                           (the "occasional event" of a long agent turn: scenario 4).
// GET  /_stats              {"openStreams":…,"peakOpenStreams":…}
// GET  /.well-known/agent-card.json, POST /a2a   the same runner as an A2A 1.0 agent
//                           (stub-a2a-agent.mjs): a Task for SendMessage, the token events as
//                           artifact updates for SendStreamingMessage.
// POST /v1/chat/completions the same runner in OpenAI's shape, for peers that speak only that
//                           (Portkey's gateway, issue 26): `"stream":true` in the body streams the
//                           same token events as `data: {chat.completion.chunk}` lines (each still
//                           carrying seq and sent_at) and `data: [DONE]`; otherwise one
//                           chat.completion object, built once.
//
// Stream parameters come in the `x-bench-stream` request header, query-string syntax (a
// proxy in front forwards custom headers, while the gateway calls a fixed upstream path):
// tokens (20), intervalMs (10), firstTokenDelayMs (= intervalMs), idle (0|1), eventEveryMs
// (15000, idle streams only). The query string is read when the header is absent.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { isMainModule, readOption } from './cli-args.mjs';
import { a2aCard, a2aDialect, a2aTaskBody, requestId, STREAMING_SEND } from './stub-a2a-agent.mjs';

export const CHAT_RESPONSE = {
  response: 'Hello! I am the stub runner. How can I help you today?',
  tool_calls: [],
  metadata: { model: 'stub-runner-1', tokens_used: 14, latency_ms: 1 },
};

const CHAT_BODY = Buffer.from(JSON.stringify(CHAT_RESPONSE));
const CHAT_HEADERS = { 'content-type': 'application/json', 'content-length': String(CHAT_BODY.length) };
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
const NOT_FOUND_BODY = Buffer.from('{"error":{"type":"not_found","message":"stub: no such route"}}');
const TIME_ORIGIN_MS = performance.timeOrigin;
const OPENAI_CHAT_BODY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 0,
    model: 'stub-runner-1',
    choices: [{ index: 0, message: { role: 'assistant', content: CHAT_RESPONSE.response }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 9, completion_tokens: 14, total_tokens: 23 },
  }),
);
const OPENAI_CHAT_HEADERS = { 'content-type': 'application/json', 'content-length': String(OPENAI_CHAT_BODY.length) };
/** Marks a streamed request without parsing the body (the stub must stay cheap). */
const STREAM_TRUE = /"stream"\s*:\s*true/;

function intOr(value, fallback) {
  if (value === null || value === undefined || value === '') return fallback;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? Math.floor(n) : fallback;
}

/** The event text; `sent_at` is taken at the last moment before the write. */
function tokenEvent(seq) {
  const sentAt = (TIME_ORIGIN_MS + performance.now()).toFixed(3);
  return `event: token\ndata: {"content":"tok${seq} ","seq":${seq},"sent_at":${sentAt}}\n\n`;
}

/** The same token as an OpenAI chat.completion.chunk; seq and sent_at ride along. */
function openAiTokenEvent(seq) {
  const sentAt = (TIME_ORIGIN_MS + performance.now()).toFixed(3);
  return `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":"stub-runner-1","choices":[{"index":0,"delta":{"content":"tok${seq} "},"finish_reason":null}],"seq":${seq},"sent_at":${sentAt}}\n\n`;
}

const OPENAI_DONE =
  'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":0,"model":"stub-runner-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
const AGENT_DIALECT = { token: tokenEvent, done: (tokens, intervalMs) => `event: done\ndata: {"tokens_used":${tokens},"latency_ms":${tokens * intervalMs}}\n\n` };
const OPENAI_DIALECT = { token: openAiTokenEvent, done: () => OPENAI_DONE };

export async function startStubRunner({ port = 0, host = '127.0.0.1' } = {}) {
  let openStreams = 0;
  let peakOpenStreams = 0;

  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (req.method === 'POST' && path === '/api/v1/chat') {
      req.resume();
      req.once('end', () => {
        res.writeHead(200, CHAT_HEADERS);
        res.end(CHAT_BODY);
      });
      return;
    }
    if (req.method === 'POST' && path === '/api/v1/chat/stream') {
      req.resume();
      const header = req.headers['x-bench-stream'];
      const params = new URLSearchParams(typeof header === 'string' ? header : q === -1 ? '' : url.slice(q + 1));
      req.once('end', () => stream(res, params, AGENT_DIALECT));
      return;
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (text) => (body += text));
      req.once('end', () => {
        if (!STREAM_TRUE.test(body)) {
          res.writeHead(200, OPENAI_CHAT_HEADERS);
          res.end(OPENAI_CHAT_BODY);
          return;
        }
        const header = req.headers['x-bench-stream'];
        stream(res, new URLSearchParams(typeof header === 'string' ? header : q === -1 ? '' : url.slice(q + 1)), OPENAI_DIALECT);
      });
      return;
    }
    if (req.method === 'POST' && path === '/a2a') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (text) => (body += text));
      req.once('end', () => {
        const id = requestId(body);
        if (!STREAMING_SEND.test(body)) {
          const answer = a2aTaskBody(CHAT_RESPONSE.response, CHAT_RESPONSE.metadata.tokens_used, id);
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(answer.length) });
          res.end(answer);
          return;
        }
        const header = req.headers['x-bench-stream'];
        stream(res, new URLSearchParams(typeof header === 'string' ? header : q === -1 ? '' : url.slice(q + 1)), a2aDialect(id));
      });
      return;
    }
    if (req.method === 'GET' && path === '/.well-known/agent-card.json') {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(a2aCard(`http://${req.headers.host}`));
      return;
    }
    if (req.method === 'GET' && path === '/_stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ openStreams, peakOpenStreams }));
      return;
    }
    req.resume();
    res.writeHead(404, { 'content-type': 'application/json', 'content-length': String(NOT_FOUND_BODY.length) });
    res.end(NOT_FOUND_BODY);
  });
  // Longer than every proxy's pool idle timeout: the stub never closes a pooled connection.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;

  function stream(res, params, dialect) {
    const idle = params.get('idle') === '1';
    const tokens = intOr(params.get('tokens'), 20);
    const intervalMs = intOr(params.get('intervalMs'), 10);
    const firstTokenDelayMs = intOr(params.get('firstTokenDelayMs'), intervalMs);
    const eventEveryMs = Math.max(1, intOr(params.get('eventEveryMs'), 15_000));
    let seq = 0;
    let timer = null;
    openStreams += 1;
    if (openStreams > peakOpenStreams) peakOpenStreams = openStreams;
    res.once('close', () => {
      openStreams -= 1;
      if (timer) clearTimeout(timer);
    });
    res.writeHead(200, SSE_HEADERS);
    // A real runner sends its headers before the model produces anything (an A2A agent: its Task).
    if (dialect.start !== undefined) res.write(dialect.start);
    else res.flushHeaders();

    const next = () => {
      timer = null;
      if (res.destroyed) return;
      if (idle || seq < tokens) {
        res.write(dialect.token(seq));
        seq += 1;
        timer = setTimeout(next, idle ? eventEveryMs : intervalMs);
        return;
      }
      res.end(dialect.done(tokens, intervalMs));
    };
    timer = setTimeout(next, idle ? eventEveryMs : firstTokenDelayMs);
  }

  // A deep backlog: scenario 4 opens thousands of connections in a few seconds.
  const boundPort = await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, backlog: 4096 }, () => resolve(server.address().port));
  });
  return { server, port: boundPort, url: `http://${host}:${boundPort}` };
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  const stub = await startStubRunner({
    port: Number(readOption(argv, 'port', undefined, '0')),
    host: readOption(argv, 'host', undefined, '127.0.0.1'),
  });
  process.stdout.write(`listening ${stub.port}\n`);
  const stop = () => {
    stub.server.close(() => process.exit(0));
    stub.server.closeAllConnections();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
