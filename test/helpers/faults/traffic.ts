// Concurrent client traffic for fault tests: N loops sending requests (chat, streams, aborted
// streams) until stopped, each outcome recorded with its own X-Request-Id so it can be found
// again in the audit sinks and on the runner.
import { Agent, request } from 'undici';
import { parseSseReference } from '../reference-sse.js';
import { sleep } from '../wait.js';

export type Route = 'chat' | 'chat/stream';

export interface RequestPlan {
  agent: string;
  route: Route;
  /** Default `{"message":"hi"}`. */
  body?: string;
  /** Default the traffic's key; null sends none. */
  key?: string | null;
  /** The client gives up this long after sending (mid-answer or before it). */
  abortAfterMs?: number;
  headers?: Record<string, string>;
}

export interface Outcome {
  id: string;
  label: string;
  agent: string;
  route: Route;
  /** 0 when no response head arrived. */
  status: number;
  errorType: string | undefined;
  retryAfter: string | undefined;
  startedMs: number;
  latencyMs: number;
  bytes: number;
  /** Names of the SSE events received (streams). */
  events: string[];
  lastEventData: string | undefined;
  /** The body as text when it is small (error bodies, short streams). */
  text: string | undefined;
  /** The request failed on the client side: connection cut, reset, or our own abort. */
  transportError: string | undefined;
  aborted: boolean;
}

export interface TrafficOptions {
  baseUrl: string;
  key: string;
  concurrency: number;
  plan: (index: number) => RequestPlan;
  /** Prefix of the X-Request-Id of every request (unique per run). */
  idPrefix: string;
  /** The phase label stamped on each outcome when it starts. */
  label?: () => string;
  /** Stop after this many requests in total. */
  count?: number;
  /** Pause of a loop whose connection was refused (default 20 ms). */
  refusedBackoffMs?: number;
}

export interface Traffic {
  outcomes: Outcome[];
  /** Stops sending and waits for the requests in flight. */
  stop(): Promise<Outcome[]>;
  /** Resolves when `count` requests are done (or stop() was called). */
  done: Promise<Outcome[]>;
}

const KEEP_TEXT_BYTES = 64 * 1024;

export async function send(dispatcher: Agent, baseUrl: string, key: string, id: string, label: string, plan: RequestPlan): Promise<Outcome> {
  const startedMs = performance.now();
  const outcome: Outcome = {
    id,
    label,
    agent: plan.agent,
    route: plan.route,
    status: 0,
    errorType: undefined,
    retryAfter: undefined,
    startedMs,
    latencyMs: 0,
    bytes: 0,
    events: [],
    lastEventData: undefined,
    text: undefined,
    transportError: undefined,
    aborted: false,
  };
  const controller = plan.abortAfterMs === undefined ? undefined : new AbortController();
  const timer = controller ? setTimeout(() => controller.abort(), plan.abortAfterMs) : undefined;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': id, ...plan.headers };
  const credential = plan.key === undefined ? key : plan.key;
  if (credential !== null) headers.authorization = `Bearer ${credential}`;
  const kept: Buffer[] = [];
  // The last bytes of a long body, to read how a long stream ended.
  let tail = Buffer.alloc(0);
  try {
    const response = await request(`${baseUrl}/agents/${plan.agent}/api/v1/${plan.route}`, {
      method: 'POST',
      dispatcher,
      headers,
      body: plan.body ?? '{"message":"hi"}',
      signal: controller?.signal,
    });
    outcome.status = response.statusCode;
    const retryAfter = response.headers['retry-after'];
    outcome.retryAfter = typeof retryAfter === 'string' ? retryAfter : undefined;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (outcome.bytes + chunk.length <= KEEP_TEXT_BYTES) kept.push(chunk);
      else tail = Buffer.concat([tail, chunk]).subarray(-16 * 1024);
      outcome.bytes += chunk.length;
    }
  } catch (error) {
    outcome.aborted = controller?.signal.aborted ?? false;
    outcome.transportError = error instanceof Error ? `${error.name}: ${(error as { code?: string }).code ?? error.message}` : String(error);
  } finally {
    clearTimeout(timer);
  }
  outcome.latencyMs = performance.now() - startedMs;
  const body = Buffer.concat(kept);
  if (outcome.bytes <= KEEP_TEXT_BYTES) outcome.text = body.toString('utf8');
  if (plan.route === 'chat/stream' && outcome.status === 200) {
    // For a long stream: its head, then whole events of its tail (from the first blank line in it).
    let events = parseSseReference(body).events;
    if (outcome.bytes > KEEP_TEXT_BYTES) {
      const boundary = tail.indexOf('\n\n');
      events = [...events, ...parseSseReference(boundary === -1 ? Buffer.alloc(0) : tail.subarray(boundary + 2)).events];
    }
    outcome.events = events.map((e) => e.name);
    outcome.lastEventData = events.at(-1)?.data;
  } else if (outcome.status >= 400 && outcome.text?.startsWith('{"error"')) {
    try {
      outcome.errorType = (JSON.parse(outcome.text) as { error: { type?: string } }).error.type;
    } catch {
      // A runner's own error body (passed through) need not be the gateway's shape.
    }
  }
  return outcome;
}

export function startTraffic(options: TrafficOptions): Traffic {
  const dispatcher = new Agent({ connections: options.concurrency * 2, pipelining: 1, keepAliveTimeout: 10_000 });
  const outcomes: Outcome[] = [];
  let running = true;
  let next = 0;
  const loop = async (): Promise<void> => {
    while (running && (options.count === undefined || next < options.count)) {
      const index = next++;
      const plan = options.plan(index);
      const outcome = await send(dispatcher, options.baseUrl, options.key, `${options.idPrefix}-${index}`, options.label?.() ?? '', plan);
      outcomes.push(outcome);
      // A client backs off a little when it cannot connect, rather than spinning.
      if (outcome.status === 0 && !outcome.aborted && outcome.latencyMs < 20) await sleep(options.refusedBackoffMs ?? 20);
    }
  };
  const loops = Array.from({ length: options.concurrency }, loop);
  const done = Promise.all(loops).then(async () => {
    await dispatcher.close().catch(() => dispatcher.destroy());
    return outcomes;
  });
  return {
    outcomes,
    done,
    async stop() {
      running = false;
      return done;
    },
  };
}

/** Outcomes grouped by a key, e.g. `${agent} ${route} ${status}`, with counts. */
export function tally(outcomes: readonly Outcome[], keyOf: (o: Outcome) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) {
    const key = keyOf(outcome);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/** One line per distinct answer: "503 agent_unavailable ×12". */
export function answerSummary(outcomes: readonly Outcome[]): string {
  return Object.entries(
    tally(outcomes, (o) => {
      if (o.status === 0) return o.aborted ? 'client abort' : `no answer (${o.transportError ?? '?'})`;
      const tail = o.route === 'chat/stream' && o.status === 200 ? (o.events.includes('error') ? ' + event: error' : o.events.at(-1) === 'done' ? ' + done' : ` + ${o.events.at(-1) ?? 'no event'}`) : '';
      const cut = o.transportError ? ' (cut)' : '';
      return `${o.status}${o.errorType ? ` ${o.errorType}` : ''}${tail}${cut}`;
    }),
  )
    .map(([answer, count]) => `${answer} ×${count}`)
    .join(', ');
}
