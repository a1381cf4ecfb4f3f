// Failed admin-token attempts (docs/admin-api.md "Authentication"): a wrong bearer token on
// the admin API and a refused dashboard sign-in are logged (never the token), counted in
// agentgw_admin_auth_failures_total, and throttled per client address like wrong keys on the
// public listener (keys.failed_auth: max_attempts per `per`, then 429 for block_for). Counted
// in this process's memory: the admin listener is served by one process.
import type { IncomingMessage } from 'node:http';
import { FailedAuthThrottle } from '../auth/failed-auth-throttle.js';
import type { Clock } from '../clock.js';
import type { GatewayConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../logger.js';
import { metrics } from '../metrics/metrics.js';

const REFUSED_TOKEN_TYPES: ReadonlySet<string> = new Set(['invalid_admin_token']);

export class AdminTokenAttempts {
  private readonly throttle: FailedAuthThrottle;

  constructor(
    config: GatewayConfig,
    clock: Clock,
    private readonly logger: Logger,
  ) {
    this.throttle = new FailedAuthThrottle({ ...config.keys.failedAuth, clock, logger });
  }

  /** Before a token is compared: 429 rate_limit_exceeded while the caller's address is blocked. */
  check(req: IncomingMessage): void {
    this.throttle.check(addressOf(req));
  }

  /**
   * After a request failed with `error`: a refused token is logged, counted and recorded
   * against the address; returns the error to answer (the 429 once the address is past the
   * limit, else `error` itself).
   */
  async refused(req: IncomingMessage, error: unknown, path: string): Promise<unknown> {
    if (!(error instanceof GatewayError) || !REFUSED_TOKEN_TYPES.has(error.type)) return error;
    const clientIp = addressOf(req);
    metrics.adminAuthFailures.inc({ reason: error.type });
    this.logger.warn({ event: 'admin_auth_failed', reason: error.type, client_ip: clientIp, method: req.method, path }, 'admin token refused');
    return (await this.throttle.recordFailure(clientIp)) ?? error;
  }
}

function addressOf(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? 'unknown';
}
