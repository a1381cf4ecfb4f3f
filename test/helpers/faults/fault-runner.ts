// One fake agent runner that misbehaves on demand: the mode is the first path segment of the
// agent's upstream URL (`http://127.0.0.1:P/<mode>/api/v1`), so one runner serves a healthy
// agent and a broken one side by side; `runner` in the (forwarded) request body tunes it.
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { chatResponse, startFakeUpstream, type FakeUpstream } from '../fake-upstream.js';
import { sleep } from '../wait.js';

export type RunnerMode =
  | 'ok' // JSON answer; a short stream of tokens and done
  | 'slow' // a long stream: `runner.tokens` tokens, `runner.intervalMs` apart
  | 'silent' // accepts the request, never answers
  | 'stall' // answers headers and one token, then nothing
  | 'reset' // answers part of the body, then resets the connection
  | 'garbage' // 200 with random bytes as the body (JSON or event stream)
  | 'plain' // 200 text/plain on both routes
  | 'err500' // 500 with a JSON body
  | 'huge' // 200 with a 50 MB body (JSON or events), written at the pace the gateway reads
  | 'firehose'; // events as fast as back-pressure allows, up to `runner.bytes`

export interface RunnerOptions {
  tokens?: number;
  intervalMs?: number;
  bytes?: number;
}

export interface FaultRunner {
  upstream: FakeUpstream;
  baseUrl(mode: RunnerMode): string;
  /** Requests still open on the runner, all modes or one. */
  open(mode?: RunnerMode): number;
  /** Bytes the firehose mode has written so far (all its streams). */
  firehoseWritten(): number;
  close(): Promise<void>;
}

export const HUGE_BODY_BYTES = 50 * 1024 * 1024;
/** One event of the firehose mode (about 1 KB). */
export const FIREHOSE_EVENT = Buffer.from(`event: token\ndata: {"content":"${'y'.repeat(1_000)}"}\n\n`);

/** Writes `chunk`, waiting for 'drain' when the socket is full: a well-behaved producer. */
async function writePaced(res: ServerResponse, chunk: Buffer | string): Promise<boolean> {
  if (res.destroyed) return false;
  if (res.write(chunk)) return true;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
  return !res.destroyed;
}

function optionsOf(body: Buffer): RunnerOptions {
  try {
    return ((JSON.parse(body.toString('utf8')) as { runner?: RunnerOptions }).runner ?? {}) as RunnerOptions;
  } catch {
    return {};
  }
}

export async function startFaultRunner(): Promise<FaultRunner> {
  const openByMode = new Map<string, number>();
  let firehoseBytes = 0;
  // Keep-alive sockets serve many requests: one error listener each.
  const quietSockets = new WeakSet<object>();
  const upstream = await startFakeUpstream(async (req, res, seen) => {
    const mode = (seen.path.split('/')[1] ?? 'ok') as RunnerMode;
    const stream = seen.path.endsWith('/chat/stream');
    const options = optionsOf(seen.body);
    // Gone before its body was read: the fake upstream already counted its close.
    if (req.socket.destroyed) return;
    openByMode.set(mode, (openByMode.get(mode) ?? 0) + 1);
    res.once('close', () => openByMode.set(mode, openByMode.get(mode)! - 1));
    // The fake upstream keeps every body; a long run should not keep them all.
    if (seen.body.length > 4096) seen.body = seen.body.subarray(0, 4096);
    if (!quietSockets.has(req.socket)) {
      quietSockets.add(req.socket);
      req.socket.on('error', () => {});
    }

    switch (mode) {
      case 'silent':
        return;
      case 'plain':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('hello, not an event stream');
        return;
      case 'err500':
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":"runner exploded"}');
        return;
      case 'garbage':
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
        res.write(randomBytes(2_048));
        await sleep(5);
        res.end(randomBytes(2_048));
        return;
      case 'reset':
        if (stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('event: token\ndata: {"content":"a"}\n\n');
        } else {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
          res.write('{"response":"partial');
        }
        await sleep(20);
        res.socket?.destroy();
        return;
      case 'stall':
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
        res.write(stream ? 'event: token\ndata: {"content":"a"}\n\n' : '{"response":"');
        return;
      case 'huge': {
        res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
        const total = options.bytes ?? HUGE_BODY_BYTES;
        if (stream) {
          const event = Buffer.from(`event: token\ndata: {"content":"${'x'.repeat(1_000)}"}\n\n`);
          for (let sent = 0; sent + event.length <= total; sent += event.length) if (!(await writePaced(res, event))) return;
          res.end('event: done\ndata: {"tokens_used":1}\n\n');
          return;
        }
        // {"response":"xxxx…","metadata":{"tokens_used":1}} with the x's filling up to `total`.
        const head = '{"response":"';
        const tail = '","tool_calls":[],"metadata":{"tokens_used":1}}';
        const block = Buffer.alloc(64 * 1024, 0x78);
        if (!(await writePaced(res, head))) return;
        let left = total - head.length - tail.length;
        while (left > 0) {
          const chunk = left >= block.length ? block : block.subarray(0, left);
          if (!(await writePaced(res, chunk))) return;
          left -= chunk.length;
        }
        res.end(tail);
        return;
      }
      case 'firehose': {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const event = FIREHOSE_EVENT;
        const total = options.bytes ?? 8 * 1024 * 1024;
        for (let sent = 0; sent + event.length <= total; sent += event.length) {
          if (!(await writePaced(res, event))) return;
          firehoseBytes += event.length;
        }
        res.end(`event: done\ndata: {"tokens_used":${Math.floor(total / event.length)}}\n\n`);
        return;
      }
      case 'slow': {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        const tokens = options.tokens ?? 50;
        for (let i = 0; i < tokens; i++) {
          await sleep(options.intervalMs ?? 20);
          if (res.destroyed) return;
          res.write(`event: token\ndata: {"content":"t${i}"}\n\n`);
        }
        res.end(`event: done\ndata: {"tokens_used":${tokens},"latency_ms":1}\n\n`);
        return;
      }
      default: {
        if (stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('event: token\ndata: {"content":"Hi"}\n\n');
          await sleep(2);
          res.write('event: token\ndata: {"content":" there"}\n\n');
          res.end('event: done\ndata: {"tokens_used":2,"latency_ms":2}\n\n');
          return;
        }
        const body = JSON.stringify(chatResponse('Hello from the fault runner', 5));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      }
    }
  });
  return {
    upstream,
    baseUrl: (mode) => `${upstream.url}/${mode}/api/v1`,
    open: (mode) => (mode ? (openByMode.get(mode) ?? 0) : upstream.openRequests()),
    firehoseWritten: () => firehoseBytes,
    close: () => upstream.close(),
  };
}
