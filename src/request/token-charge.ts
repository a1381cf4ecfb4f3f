// What a token budget is charged for one answer (docs/rate-limits.md, "Token budgets";
// docs/decisions/0044-budget-charged-for-what-was-relayed.md). The runner's own count when it
// gave a valid one; otherwise an estimate of what the client was sent, so that a client
// leaving before `done` (or an answer too large to read, or a runner reporting nonsense)
// cannot take an answer for free:
// - a stream: one token per event relayed before it ended (the runner's events are its
//   token chunks: the demo agent sends one token per event);
// - a JSON answer, and an A2A agent's stream (whose events may each carry any amount of
//   text: `streamBytesCharged`, its token and done events): one token per BYTES_PER_TOKEN
//   bytes relayed, rounded up.
// Only an answer the runner started with a 2xx is estimated: a refusal or an error answer
// the gateway wrote itself costs nothing.
import type { RequestState } from './request-state.js';

/** The estimate's byte rule for a JSON answer without a usable count (about 4 bytes of English text per token). */
export const BYTES_PER_TOKEN = 4;

export function tokensToCharge(state: RequestState): number {
  const reported = state.tokensUsed;
  if (reported !== null) return reported;
  const status = state.upstreamStatus;
  if (status < 200 || status >= 300) return 0;
  // The gateway answered its own error instead of the runner's 2xx (an A2A agent's answer
  // refused as too large or malformed): the client was sent none of the runner's answer.
  if (state.errorStatus !== 0) return 0;
  if (state.route === 'chat/stream') {
    const bytes = state.streamBytesCharged;
    return bytes < 0 ? state.eventsRelayed : Math.ceil(bytes / BYTES_PER_TOKEN);
  }
  return Math.ceil(state.bytesOut / BYTES_PER_TOKEN);
}
