// The audit outcome of a request (docs/design.md, "Usage audit records"), decided in this one
// place when its response closes, from what the stages recorded on its RequestState. The order
// of the checks is the precedence: what ended the exchange first outranks the status it left.
import type { ServerResponse } from 'node:http';
import type { AuditOutcome } from '../audit/audit-record.js';
import type { RequestState } from '../request/request-state.js';
import type { UpstreamFailureKind } from '../request/upstream-failure-kind.js';

/** `ending`: decided as the response ends (its last bytes about to go out), not when it has closed. */
export function requestOutcome(state: RequestState, res: ServerResponse, ending = false): AuditOutcome {
  if (state.failureKind !== undefined) return outcomeForFailure(state.failureKind);
  if (state.endedInError) return 'error';
  if (state.streamDone) return 'ok';
  if (state.refusal !== undefined) return state.refusal;
  const refused = state.errorStatus;
  if (refused === 400 || refused === 413 || refused === 415) return 'invalid_request';
  if (state.upstreamStatus >= 500) return 'upstream_error';
  // Nothing above: the status says it, once the client has the whole answer. (Over HTTP/2
  // a stream the client cancelled also reports writableFinished; only writableEnded tells.)
  if (!ending && (!res.headersSent || !res.writableFinished || !res.writableEnded)) return 'client_closed';
  return outcomeFromStatus(res.statusCode);
}

function outcomeForFailure(kind: UpstreamFailureKind): AuditOutcome {
  return kind === 'headers_timeout' || kind === 'idle_timeout' || kind === 'max_duration' ? 'timeout' : 'upstream_error';
}

function outcomeFromStatus(status: number): AuditOutcome {
  if (status < 400) return 'ok';
  if (status === 429) return 'rate_limited';
  if (status < 500) return 'invalid_request';
  return 'error';
}
