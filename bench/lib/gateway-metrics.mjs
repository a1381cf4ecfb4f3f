// The gateway's own view of a measurement, from its admin /metrics: event-loop delay over
// the interval (prom-client resets that histogram on every scrape, so a scrape before and one
// after bracket the run) and the deltas of three histograms: `agentgw_request_duration_seconds`
// (the whole request as the gateway times it), `agentgw_upstream_duration_seconds` (the
// runner exchange) and `agentgw_overhead_seconds` (the rest: reading the body, auth, the
// Redis round trip, writing the answer). Together they tell whether latency a client sees
// was spent inside the gateway's process, in its upstream exchange, or outside both.
//
// prom-client samples the loop with a 10 ms timer and records the whole interval, so an idle
// loop reads 10 ms: that resolution is subtracted here, leaving the delay beyond it.

const EVENT_LOOP_RESOLUTION_MS = 10;

export async function scrapeText(adminUrl) {
  try {
    const res = await fetch(`${adminUrl}/metrics`);
    return await res.text();
  } catch {
    return '';
  }
}

function sample(text, name) {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) : null;
}

/** Cumulative bucket counts of one histogram series: [{ le, count }] in ascending le. */
function buckets(text, name, labelText) {
  const out = [];
  const re = new RegExp(`^${name}_bucket\\{([^}]*)\\} ([0-9.eE+-]+)$`, 'gm');
  for (const m of text.matchAll(re)) {
    if (!m[1].includes(labelText)) continue;
    const le = /le="([^"]+)"/.exec(m[1])?.[1];
    out.push({ le: le === '+Inf' ? Infinity : Number(le), count: Number(m[2]) });
  }
  return out.sort((a, b) => a.le - b.le);
}

/** The upper bound (ms) of the bucket holding the p-th percentile of the delta, or null. */
function bucketPercentileMs(before, after, p) {
  const delta = after.map((b, i) => ({ le: b.le, count: b.count - (before[i]?.count ?? 0) }));
  const total = delta.at(-1)?.count ?? 0;
  if (total <= 0) return null;
  const wanted = (p / 100) * total;
  const hit = delta.find((b) => b.count >= wanted);
  return hit ? hit.le * 1000 : null;
}

/** `begin()` when the measured part starts (not awaited), `end()` after it. */
export function gatewayMetricsBracket(adminUrl, route = 'chat') {
  const label = `route="${route}"`;
  const histograms = (text) => Object.fromEntries(HISTOGRAMS.map(([key, name]) => [key, buckets(text, name, label)]));
  let before = null;
  return {
    begin: () => {
      before = scrapeText(adminUrl).then(histograms);
    },
    end: async () => {
      if (!before) return null;
      const text = await scrapeText(adminUrl);
      return view(text, await before, histograms(text));
    },
  };
}

const HISTOGRAMS = [
  ['request', 'agentgw_request_duration_seconds'],
  ['upstream', 'agentgw_upstream_duration_seconds'],
  ['overhead', 'agentgw_overhead_seconds'],
];

function view(text, before, after) {
  const ms = (name) => {
    const v = sample(text, name);
    return v === null ? null : Math.max(0, v * 1000 - EVENT_LOOP_RESOLUTION_MS);
  };
  return {
    eventLoopDelayP50Ms: ms('nodejs_eventloop_lag_p50_seconds'),
    eventLoopDelayP99Ms: ms('nodejs_eventloop_lag_p99_seconds'),
    eventLoopDelayMaxMs: ms('nodejs_eventloop_lag_max_seconds'),
    requestP50AtMostMs: bucketPercentileMs(before.request, after.request, 50),
    requestP99AtMostMs: bucketPercentileMs(before.request, after.request, 99),
    upstreamP50AtMostMs: bucketPercentileMs(before.upstream, after.upstream, 50),
    upstreamP99AtMostMs: bucketPercentileMs(before.upstream, after.upstream, 99),
    overheadP50AtMostMs: bucketPercentileMs(before.overhead, after.overhead, 50),
    overheadP99AtMostMs: bucketPercentileMs(before.overhead, after.overhead, 99),
  };
}
