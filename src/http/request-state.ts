// Everything one request accumulates for its audit record, log line and metrics. One
// object per request with a fixed shape, filled in by the pipeline stages as they run.
import type { AuditOutcome } from '../audit/audit-record.js';
import type { AuthenticatedKey } from '../auth/key-record.js';
import type { UpstreamFailureKind } from '../proxy/upstream-errors.js';
import type { ChatRoute } from './routing.js';

export class RequestState {
  agentId: string | undefined = undefined;
  route: ChatRoute | undefined = undefined;
  key: AuthenticatedKey | undefined = undefined;
  /** Set by the stage that decided it; derived from the status when left undefined. */
  outcome: AuditOutcome | undefined = undefined;
  tokensUsed: number | null = null;
  /** performance.now() marks; -1 until the upstream is called. */
  upstreamStartMs = -1;
  upstreamEndMs = -1;
  bytesIn = 0;
  bytesOut = 0;
  userId: string | null = null;
  sessionId: string | null = null;
  traceId = '';
  failureKind: UpstreamFailureKind | undefined = undefined;
  errorType: string | undefined = undefined;

  constructor(
    readonly requestId: string,
    readonly clientIp: string,
    /** Wall-clock start (ms since epoch), from the injected clock. */
    readonly startedAtMs: number,
    /** Monotonic start, for durations. */
    readonly startedMonoMs: number,
  ) {}

  upstreamLatencyMs(): number | null {
    if (this.upstreamStartMs < 0) return null;
    const end = this.upstreamEndMs < 0 ? performance.now() : this.upstreamEndMs;
    return end - this.upstreamStartMs;
  }
}
