// Streams (scenario 3) with per-event timing across processes. The stub stamps each token
// event with the wall-clock time it wrote it (performance.timeOrigin + performance.now());
// this client takes the same clock when the event is complete in its hands (its closing
// blank line read). Both run on one machine, so the difference is the event's trip through
// whatever sits between them; any constant offset between the two processes' time origins
// cancels when a proxy's figure is compared with the direct one.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { REQUEST_BODY } from './load-tools.mjs';

const TIME_ORIGIN_MS = performance.timeOrigin;
// The native stub's `"seq":N,"sent_at":T`, or `seq=N sent_at=T` inside the text of its A2A face (stub-a2a-agent.mjs).
const TOKEN_STAMP = /(?:"seq":(\d+),"sent_at":|seq=(\d+) sent_at=)([\d.]+)/;

/**
 * Runs `streams` streams, `concurrency` at a time.
 * @param {{ url: string, streamPath: string, headers: Record<string, string> }} target
 */
export async function runTimedStreams(target, { streams, concurrency, tokens, intervalMs }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const result = {
    streams,
    completed: 0,
    errors: 0,
    errorKinds: {},
    eventDelaysMs: [],
    headersMs: [],
    firstEventMs: [],
    /** An event still undelivered when the stub had already written the next one. */
    heldBack: 0,
    /** A sequence number not one above the previous one (reordered, duplicated or lost). */
    outOfOrder: 0,
    events: 0,
  };
  const streamParams = `tokens=${tokens}&intervalMs=${intervalMs}`;
  let next = 0;
  const worker = async () => {
    while (next < streams) {
      next += 1;
      try {
        const one = await oneStream(agent, target, streamParams, tokens);
        result.completed += 1;
        result.events += one.events;
        result.heldBack += one.heldBack;
        result.outOfOrder += one.outOfOrder;
        result.headersMs.push(one.headersMs);
        result.firstEventMs.push(one.firstEventMs);
        for (const d of one.delays) result.eventDelaysMs.push(d);
      } catch (error) {
        result.errors += 1;
        const kind = error.kind ?? error.code ?? 'error';
        result.errorKinds[kind] = (result.errorKinds[kind] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  return result;
}

function streamError(kind, message) {
  const error = new Error(message);
  error.kind = kind;
  return error;
}

function oneStream(agent, target, streamParams, tokens) {
  const body = target.streamBody ?? REQUEST_BODY;
  return new Promise((resolve, reject) => {
    const req = http.request(`${target.url}${target.streamPath}`, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'x-bench-stream': streamParams,
        ...target.headers,
      },
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(streamError('timeout', 'stream did not finish within 15 s'));
    }, 15_000);
    const t0 = performance.now();
    let headersMs = null;
    let firstEventMs = null;
    let buffered = '';
    let lastSeq = -1;
    let previous = null; // { recvAt } of the last token event, checked against the next one's sent_at
    let heldBack = 0;
    let outOfOrder = 0;
    let events = 0;
    let sawDone = false;
    const delays = [];
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.on('response', (res) => {
      headersMs = performance.now() - t0;
      if (res.statusCode !== 200) {
        res.resume();
        clearTimeout(timer);
        reject(streamError(`status_${res.statusCode}`, `status ${res.statusCode}`));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (text) => {
        const recvMono = performance.now();
        const recvAt = TIME_ORIGIN_MS + recvMono;
        buffered += text;
        let end;
        while ((end = buffered.indexOf('\n\n')) !== -1) {
          const event = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          // A token is any event carrying the stub's stamp: `event: token` in the agent API,
          // a `data:` chunk in OpenAI's shape (a peer that speaks it).
          const stamp = TOKEN_STAMP.exec(event);
          if (stamp !== null) {
            const seq = Number(stamp[1] ?? stamp[2]);
            const sentAt = Number(stamp[3]);
            if (firstEventMs === null) firstEventMs = recvMono - t0;
            if (seq !== lastSeq + 1) outOfOrder += 1;
            lastSeq = seq;
            if (previous !== null && previous.recvAt >= sentAt) heldBack += 1;
            previous = { recvAt };
            delays.push(recvAt - sentAt);
            events += 1;
          } else if (event.startsWith('event: done') || event === 'data: [DONE]') {
            sawDone = true;
          } else if (event.startsWith('event: error')) {
            clearTimeout(timer);
            req.destroy();
            reject(streamError('error_event', event));
          }
        }
      });
      res.on('end', () => {
        clearTimeout(timer);
        if (!sawDone) reject(streamError('no_done', 'stream ended without a done event'));
        else if (events !== tokens) reject(streamError('missing_events', `${events}/${tokens} token events`));
        else resolve({ headersMs, firstEventMs, delays, heldBack, outOfOrder, events });
      });
      res.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    req.end(body);
  });
}
