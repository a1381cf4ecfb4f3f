// What a token budget is charged for one answer (src/request/token-charge.ts, decision 0044):
// the runner's valid count, else an estimate of what the client was sent, and nothing for a
// refusal or an error the gateway answered itself.
import { describe, expect, it } from 'vitest';
import { RequestState } from '../../../src/request/request-state.js';
import { BYTES_PER_TOKEN, tokensToCharge } from '../../../src/request/token-charge.js';

function answered(route: 'chat' | 'chat/stream', upstreamStatus: number): RequestState {
  const state = new RequestState('req', '10.0.0.1', 0, 0);
  state.route = route;
  state.upstreamStatus = upstreamStatus;
  return state;
}

describe('tokensToCharge', () => {
  it("charges the runner's own count when it gave one", () => {
    const state = answered('chat', 200);
    state.tokensUsed = 42;
    state.bytesOut = 10_000;
    expect(tokensToCharge(state)).toBe(42);
  });

  it('without a count: one token per event relayed on a stream, one per 4 bytes (rounded up) on /chat', () => {
    const stream = answered('chat/stream', 200);
    stream.eventsRelayed = 24;
    expect(tokensToCharge(stream)).toBe(24);
    const chat = answered('chat', 200);
    chat.bytesOut = 4 * BYTES_PER_TOKEN + 1;
    expect(tokensToCharge(chat)).toBe(5);
  });

  it("without a count, an A2A agent's stream is charged by the bytes of its events, not one token per event (H3-08)", () => {
    const stream = answered('chat/stream', 200);
    stream.eventsRelayed = 5;
    stream.streamBytesCharged = 5 * 96 * 1024;
    stream.bytesOut = stream.streamBytesCharged + 150;
    expect(tokensToCharge(stream)).toBe((5 * 96 * 1024) / BYTES_PER_TOKEN);
    stream.tokensUsed = 7;
    expect(tokensToCharge(stream)).toBe(7);
  });

  it("charges nothing when the runner's answer was not a 2xx, or the gateway answered its own error instead", () => {
    const refusedByRunner = answered('chat', 503);
    refusedByRunner.bytesOut = 400;
    expect(tokensToCharge(refusedByRunner)).toBe(0);
    // An A2A agent's 200 whose body the gateway refused (too large, malformed): the client got a 502.
    const replaced = answered('chat', 200);
    replaced.bytesOut = 120;
    replaced.errorStatus = 502;
    expect(tokensToCharge(replaced)).toBe(0);
  });
});
