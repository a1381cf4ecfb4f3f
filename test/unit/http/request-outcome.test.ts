// The audit outcome from what the stages recorded, and which record outranks which.
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { requestOutcome } from '../../../src/http/request-outcome.js';
import { RequestState } from '../../../src/request/request-state.js';

interface Answer {
  headersSent: boolean;
  writableFinished: boolean;
  writableEnded: boolean;
  statusCode: number;
}

const NOTHING_SENT: Answer = { headersSent: false, writableFinished: false, writableEnded: false, statusCode: 200 };
const finished = (statusCode: number): Answer => ({ headersSent: true, writableFinished: true, writableEnded: true, statusCode });
const cutShort = (statusCode: number): Answer => ({ headersSent: true, writableFinished: false, writableEnded: false, statusCode });
/** node:http2's compatibility response when the client cancels the stream: "finished", never ended. */
const cancelledHttp2Stream = (statusCode: number): Answer => ({ headersSent: true, writableFinished: true, writableEnded: false, statusCode });

function outcome(record: (state: RequestState) => void, answer: Answer): string {
  const state = new RequestState('req', '10.0.0.1', 0, 0);
  record(state);
  return requestOutcome(state, answer as ServerResponse);
}

const nothing = (): void => {};

describe('requestOutcome', () => {
  it('says client_closed for an HTTP/2 stream the client cancelled mid-answer', () => {
    expect(outcome(nothing, cancelledHttp2Stream(200))).toBe('client_closed');
  });

  it('reads the status of an answer the client got whole', () => {
    expect(outcome(nothing, finished(200))).toBe('ok');
    expect(outcome(nothing, finished(304))).toBe('ok');
    expect(outcome(nothing, finished(401))).toBe('invalid_request');
    expect(outcome(nothing, finished(429))).toBe('rate_limited');
    expect(outcome(nothing, finished(500))).toBe('error');
    expect(outcome(nothing, finished(503))).toBe('error');
  });

  it('says client_closed when the client did not get the whole answer and nothing else was recorded', () => {
    expect(outcome(nothing, NOTHING_SENT)).toBe('client_closed');
    expect(outcome(nothing, cutShort(200))).toBe('client_closed');
    expect(outcome((s) => (s.errorStatus = 401), cutShort(401))).toBe('client_closed');
  });

  it('names an upstream failure by its kind, whatever was sent', () => {
    for (const kind of ['headers_timeout', 'idle_timeout', 'max_duration'] as const) {
      expect(outcome((s) => (s.failureKind = kind), NOTHING_SENT)).toBe('timeout');
    }
    for (const kind of ['connect', 'reset', 'bad_response'] as const) {
      expect(outcome((s) => (s.failureKind = kind), finished(503))).toBe('upstream_error');
    }
  });

  it('lets an upstream failure outrank the status the runner had sent before it', () => {
    expect(outcome((s) => ((s.upstreamStatus = 502), (s.failureKind = 'idle_timeout')), cutShort(502))).toBe('timeout');
    expect(outcome((s) => ((s.upstreamStatus = 200), (s.failureKind = 'reset')), cutShort(200))).toBe('upstream_error');
  });

  it('keeps the refusal reason even when the client left before the refusal was out', () => {
    expect(outcome((s) => ((s.refusal = 'rate_limited'), (s.errorStatus = 429)), cutShort(429))).toBe('rate_limited');
    expect(outcome((s) => ((s.refusal = 'token_budget_exceeded'), (s.errorStatus = 429)), finished(429))).toBe('token_budget_exceeded');
    expect(outcome((s) => ((s.refusal = 'concurrency_limit_exceeded'), (s.errorStatus = 429)), finished(429))).toBe('concurrency_limit_exceeded');
    for (const status of [400, 413, 415]) expect(outcome((s) => (s.errorStatus = status), cutShort(status))).toBe('invalid_request');
  });

  it('tells the limiter refusal from another 429 (the failed-auth throttle), which goes by the status', () => {
    expect(outcome((s) => (s.errorStatus = 429), finished(429))).toBe('rate_limited');
    expect(outcome((s) => (s.errorStatus = 429), cutShort(429))).toBe('client_closed');
  });

  it('says upstream_error for a runner 5xx, even cut short', () => {
    expect(outcome((s) => (s.upstreamStatus = 502), finished(502))).toBe('upstream_error');
    expect(outcome((s) => (s.upstreamStatus = 500), cutShort(500))).toBe('upstream_error');
    expect(outcome((s) => (s.upstreamStatus = 404), finished(404))).toBe('invalid_request');
  });

  it('says error when the gateway ended the request itself, and ok for a stream ended by done', () => {
    expect(outcome((s) => ((s.endedInError = true), (s.errorStatus = 500)), cutShort(500))).toBe('error');
    expect(outcome((s) => (s.endedInError = true), cutShort(200))).toBe('error');
    expect(outcome((s) => ((s.streamDone = true), (s.upstreamStatus = 200)), cutShort(200))).toBe('ok');
  });
});
