// Scenario 3: POST /chat/stream, 20 token events 10 ms apart, `streamConcurrency` streams at
// a time. Per event: the delay from the stub's write to the client having the whole event
// (p50/p99 over all events of a run), and how much of it the target adds over the stub
// direct in the same round. Per stream: time to the response headers and to the first
// event. Ordering: a sequence number that is not one above the last one, and an event still
// undelivered when the stub had already written the next ("held back"), are both counted.
import os from 'node:os';
import { runTimedStreams } from '../lib/sse-timing-client.mjs';
import { median, percentiles, round } from '../lib/stats.mjs';
import { fmt, renderTable } from '../lib/table.mjs';

export const STREAM_TOKENS = 20;
export const STREAM_INTERVAL_MS = 10;

export async function runStreamDelayScenario({ targets, options, log }) {
  // One unrecorded pass per target: connection pools and JIT warm.
  for (const t of targets) await runTimedStreams(t, { streams: options.streamConcurrency, concurrency: options.streamConcurrency, tokens: 3, intervalMs: 1 });
  const rows = [];
  for (let roundNo = 1; roundNo <= options.runs; roundNo += 1) {
    const shift = (roundNo - 1) % targets.length;
    const order = [...targets.slice(shift), ...targets.slice(0, shift)];
    for (const target of order) {
      const loadAvg = os.loadavg()[0];
      const r = await runTimedStreams(target, {
        streams: options.streams,
        concurrency: options.streamConcurrency,
        tokens: STREAM_TOKENS,
        intervalMs: STREAM_INTERVAL_MS,
      });
      const delay = percentiles(r.eventDelaysMs, [50, 99, 99.9]);
      const headers = percentiles(r.headersMs, [50, 99]);
      const first = percentiles(r.firstEventMs, [50, 99]);
      const row = {
        round: roundNo,
        target: target.name,
        streams: r.streams,
        completed: r.completed,
        errors: r.errors,
        errorKinds: r.errorKinds,
        events: r.events,
        heldBack: r.heldBack,
        outOfOrder: r.outOfOrder,
        eventDelayP50Ms: delay.p50,
        eventDelayP99Ms: delay.p99,
        eventDelayP999Ms: delay.p99_9,
        eventDelayMaxMs: delay.max,
        headersP50Ms: headers.p50,
        headersP99Ms: headers.p99,
        firstEventP50Ms: first.p50,
        firstEventP99Ms: first.p99,
        loadAvg1m: round(loadAvg, 2),
      };
      rows.push(row);
      log(
        `  s3 round ${roundNo} ${target.name.padEnd(16)} event delay p50 ${delay.p50?.toFixed(3)} p99 ${delay.p99?.toFixed(3)} ms` +
          `  headers p50 ${headers.p50?.toFixed(2)} first event p50 ${first.p50?.toFixed(2)} ms  held back ${r.heldBack} out of order ${r.outOfOrder}` +
          `  ${r.completed}/${r.streams} ok${r.errors ? ` errors ${JSON.stringify(r.errorKinds)}` : ''}  (load ${loadAvg.toFixed(2)})`,
      );
    }
  }
  return { tokens: STREAM_TOKENS, intervalMs: STREAM_INTERVAL_MS, concurrency: options.streamConcurrency, streamsPerRun: options.streams, rows, summary: summarise(rows, targets) };
}

function summarise(rows, targets) {
  const out = {};
  for (const t of targets) {
    const mine = rows.filter((r) => r.target === t.name);
    if (mine.length === 0) continue;
    const added = (field) =>
      median(mine.map((r) => {
        const direct = rows.find((d) => d.round === r.round && d.target === 'stub-direct');
        return direct && r[field] !== null && direct[field] !== null ? r[field] - direct[field] : null;
      }));
    const med = (field) => round(median(mine.map((r) => r[field])), 3);
    out[t.name] = {
      runs: mine.length,
      eventDelayP50Ms: med('eventDelayP50Ms'),
      eventDelayP99Ms: med('eventDelayP99Ms'),
      addedDelayP50Ms: round(added('eventDelayP50Ms'), 3),
      addedDelayP99Ms: round(added('eventDelayP99Ms'), 3),
      headersP50Ms: med('headersP50Ms'),
      headersP99Ms: med('headersP99Ms'),
      addedHeadersP50Ms: round(added('headersP50Ms'), 3),
      firstEventP50Ms: med('firstEventP50Ms'),
      firstEventP99Ms: med('firstEventP99Ms'),
      addedFirstEventP50Ms: round(added('firstEventP50Ms'), 3),
      events: mine.reduce((n, r) => n + r.events, 0),
      heldBack: mine.reduce((n, r) => n + r.heldBack, 0),
      outOfOrder: mine.reduce((n, r) => n + r.outOfOrder, 0),
      errors: mine.reduce((n, r) => n + r.errors, 0),
    };
  }
  return out;
}

export function streamDelayTable(result) {
  const rows = Object.entries(result.summary).map(([name, s]) => {
    const direct = name === 'stub-direct';
    return [
      name,
      fmt.ms(s.eventDelayP50Ms, 3),
      fmt.ms(s.eventDelayP99Ms, 3),
      direct ? '' : fmt.signedMs(s.addedDelayP50Ms, 3),
      direct ? '' : fmt.signedMs(s.addedDelayP99Ms, 3),
      fmt.ms(s.headersP50Ms),
      fmt.ms(s.headersP99Ms),
      fmt.ms(s.firstEventP50Ms),
      direct ? '' : fmt.signedMs(s.addedFirstEventP50Ms),
      `${s.heldBack}/${s.events}`,
      String(s.outOfOrder),
      String(s.errors),
    ];
  });
  return {
    title:
      `Scenario 3 — POST /chat/stream, ${result.tokens} events ${result.intervalMs} ms apart, ${result.concurrency} streams at a time, ` +
      `${result.streamsPerRun} per run: ms (median of ${result.rows.length / Object.keys(result.summary).length} rounds)`,
    ...renderTable(
      ['target', 'event p50', 'event p99', 'added p50', 'added p99', 'headers p50', 'headers p99', '1st event p50', 'added', 'held back', 'out of order', 'errors'],
      rows,
    ),
  };
}
