// Scenario 4's client, a child process of its own (it needs one file descriptor per stream,
// and run.mjs starts it under a raised `ulimit -n`): opens `count` streams at `rampPerSec`,
// each on its own connection, waits until every one has its response headers (or
// `openTimeoutS` passes), holds them `holdS` seconds counting heartbeats and events, then
// closes them all and prints one `RESULT {json}` line. While it runs it prints
// `PROGRESS {json}` every second and `HOLDING {json}` once the hold starts.
//
//   node bench/lib/idle-streams-client.mjs '{"url":…,"path":…,"headers":{…},"count":10000,
//     "rampPerSec":1000,"openTimeoutS":30,"holdS":30}'
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { REQUEST_BODY } from './load-tools.mjs';

const options = JSON.parse(process.argv[2]);
const { url, path, headers, count, rampPerSec, openTimeoutS, holdS } = options;

// Every stream on its own socket, none reused, no cap on how many are open.
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const streams = [];
const state = {
  requested: 0,
  open: 0,
  peakOpen: 0,
  endedEarly: 0,
  errors: 0,
  errorKinds: {},
  nonOk: 0,
  heartbeats: 0,
  events: 0,
  errorEvents: 0,
};
let closing = false;
const t0 = performance.now();
let allOpenMs = null;

function countError(kind) {
  state.errors += 1;
  state.errorKinds[kind] = (state.errorKinds[kind] ?? 0) + 1;
}

function openOne() {
  const stream = { req: null, open: false, done: false };
  const req = http.request(`${url}${path}`, {
    method: 'POST',
    agent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(REQUEST_BODY), ...headers },
  });
  stream.req = req;
  req.on('error', (error) => {
    if (closing || stream.done) return;
    stream.done = true;
    if (stream.open) state.open -= 1;
    countError(error.code ?? 'error');
  });
  req.on('response', (res) => {
    if (stream.done) {
      // Counted as not opened in time already.
      res.resume();
      return;
    }
    if (res.statusCode !== 200) {
      stream.done = true;
      state.nonOk += 1;
      countError(`status_${res.statusCode}`);
      res.resume();
      return;
    }
    stream.open = true;
    state.open += 1;
    if (state.open > state.peakOpen) state.peakOpen = state.open;
    if (state.open === count && allOpenMs === null) allOpenMs = performance.now() - t0;
    res.setEncoding('utf8');
    res.on('data', (text) => {
      state.heartbeats += text.split(': ping').length - 1;
      state.events += text.split('event: token').length - 1;
      state.errorEvents += text.split('event: error').length - 1;
    });
    res.on('end', () => {
      if (closing || stream.done) return;
      stream.done = true;
      state.open -= 1;
      state.endedEarly += 1;
      countError('ended_early');
    });
    res.on('error', () => {});
  });
  req.end(REQUEST_BODY);
  streams.push(stream);
}

const snapshot = () => ({ ...state, pending: state.requested - state.open - state.errors, elapsedMs: Math.round(performance.now() - t0) });
const progress = setInterval(() => process.stdout.write(`PROGRESS ${JSON.stringify(snapshot())}\n`), 1_000);

// Ramp: a batch every 20 ms, so thousands of connects do not all hit the accept queue at once.
await new Promise((resolve) => {
  const perBatch = Math.max(1, Math.round(rampPerSec / 50));
  const timer = setInterval(() => {
    for (let i = 0; i < perBatch && state.requested < count; i += 1) {
      state.requested += 1;
      openOne();
    }
    if (state.requested >= count) {
      clearInterval(timer);
      resolve();
    }
  }, 20);
});

const openDeadline = performance.now() + openTimeoutS * 1000;
while (state.open + state.errors < count && performance.now() < openDeadline) await new Promise((r) => setTimeout(r, 50));
for (const stream of streams) {
  if (stream.open || stream.done) continue;
  stream.done = true;
  countError('no_headers_in_time');
}

const openAtHoldStart = state.open;
process.stdout.write(`HOLDING ${JSON.stringify(snapshot())}\n`);
const heartbeatsBefore = state.heartbeats;
const eventsBefore = state.events;
await new Promise((r) => setTimeout(r, holdS * 1000));
const result = {
  ...snapshot(),
  count,
  openAtHoldStart,
  openAtHoldEnd: state.open,
  allOpenMs: allOpenMs === null ? null : Math.round(allOpenMs),
  holdS,
  heartbeatsDuringHold: state.heartbeats - heartbeatsBefore,
  eventsDuringHold: state.events - eventsBefore,
};
closing = true;
clearInterval(progress);
for (const stream of streams) stream.req.destroy();
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
// Let the destroys reach the sockets before exiting.
setTimeout(() => process.exit(0), 500);
