// Open-loop load at a fixed rate (scenario 2), since wrk2 is not packaged: requests leave on
// a schedule whether or not earlier ones have answered, so a slow answer cannot hold the
// next request back (no coordinated omission while the pool has free connections). Each
// latency is measured with the monotonic clock from the moment the request is handed to
// undici until the last byte of its answer, with sub-millisecond resolution.
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { REQUEST_BODY } from './load-tools.mjs';

/**
 * @param {{ url: string, chatPath: string, headers: Record<string, string> }} target
 * @param {{ ratePerSec: number, durationS: number, warmupS: number, connections?: number,
 *   onMeasureStart?: () => void }} options called as the first measured (post-warm-up) request leaves
 */
export async function runFixedRate(target, { ratePerSec, durationS, warmupS, connections = 64, onMeasureStart }) {
  const pool = new Pool(target.url, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...target.headers };
  const BODY = Buffer.from(target.chatBody ?? REQUEST_BODY);
  const warmupCount = Math.round(ratePerSec * warmupS);
  const total = warmupCount + Math.round(ratePerSec * durationS);
  const latenciesMs = new Float64Array(total - warmupCount);
  let measured = 0;
  let sent = 0;
  let done = 0;
  let errors = 0;
  /** Errors by kind: `timeout` for a request still unanswered 10 s after the last was sent. */
  const errorKinds = {};
  let non2xx = 0;
  let maxLagMs = 0;
  let closed = false;

  const fire = (index, intendedMs) => {
    const startMs = performance.now();
    const lag = startMs - intendedMs;
    if (lag > maxLagMs) maxLagMs = lag;
    pool
      .request({ path: target.chatPath, method: 'POST', headers, body: BODY })
      .then(async (res) => {
        await res.body.dump({ limit: Number.MAX_SAFE_INTEGER });
        if (closed) return;
        if (res.statusCode < 200 || res.statusCode > 299) non2xx += 1;
        else if (index >= warmupCount) latenciesMs[measured++] = performance.now() - startMs;
      })
      .catch((error) => {
        if (closed) return;
        errors += 1;
        const kind = error?.code ?? error?.name ?? 'error';
        errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
      })
      .finally(() => {
        done += 1;
      });
  };

  const startedMs = performance.now();
  const intervalMs = 1000 / ratePerSec;
  await new Promise((resolve) => {
    // A 1 ms timer and a catch-up loop: whatever is due goes out, so timer jitter shifts a
    // request by at most a tick and never lowers the rate.
    const tick = () => {
      const due = Math.min(total, Math.floor((performance.now() - startedMs) / intervalMs) + 1);
      while (sent < due) {
        if (sent === warmupCount) onMeasureStart?.();
        fire(sent, startedMs + sent * intervalMs);
        sent += 1;
      }
      if (sent < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  const sendingEndedMs = performance.now();
  // Stragglers get 10 s; one that takes longer counts as an error.
  const deadline = sendingEndedMs + 10_000;
  while (done < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  closed = true;
  errors += total - done;
  if (total > done) errorKinds.timeout = total - done;
  await pool.destroy();
  return {
    latenciesMs: latenciesMs.subarray(0, measured),
    sent,
    ok: measured,
    errors,
    errorKinds,
    non2xx,
    achievedRatePerSec: sent / ((sendingEndedMs - startedMs) / 1000),
    maxLagMs,
  };
}
