// One runner of an agent: its undici Pool and what the balancer, outlier detection and
// health checks know about it. The counters are plain integers the request path moves by
// one; nothing here reads undici's internals.
import type { ConnectionOptions } from 'node:tls';
import { Pool } from './undici-classes.js';
import type { AgentProtocol } from '../config/agent-schema.js';
import type { BoundCounter } from '../metrics/hot-path-metrics.js';
import { metrics } from '../metrics/metrics.js';
import { clientWithoutAbortReconnect } from './no-reconnect-after-abort.js';
import type { PickableTarget } from './target-picker.js';

const POOL_OPTIONS = {
  pipelining: 1,
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 600_000,
  connectTimeout: 5_000,
  // A client that leaves mid-stream must not cost a fresh upstream connection (see the file).
  factory: clientWithoutAbortReconnect,
} as const;

/** A keep-alive pool to one runner's origin; `maxConnections` unset is no cap; `tls` for an https:// runner with agents.<id>.tls. */
export function createTargetPool(origin: string, maxConnections: number | undefined, tls?: ConnectionOptions): Pool {
  // connections: null is undici's "no cap" (agents.<id>.max_connections sets one).
  return new Pool(origin, { ...POOL_OPTIONS, connections: maxConnections ?? null, ...(tls === undefined ? {} : { connect: tls }) });
}

export type TargetState = 'up' | 'ejected' | 'down';

export class UpstreamTarget implements PickableTarget {
  /** The metric label and the name in logs and the admin view: the configured URL's origin. */
  readonly origin: string;
  /** Path prefix of the runner's base URL, e.g. "/api/v1". */
  readonly basePath: string;
  readonly chatPath: string;
  readonly streamPath: string;
  /** Requests dispatched to this target and not yet settled (in flight or waiting for a connection). */
  outstanding = 0;
  /** Connect failures, resets and 5xx answers since the last good answer. */
  consecutiveFailures = 0;
  /** Outlier detection took it out of rotation, until `ejectedUntilMs` (clock time). */
  ejected = false;
  ejectedUntilMs = 0;
  /** How many ejections its next interval is based on (decays while in service). */
  ejections = 0;
  /** When it last came back from an ejection (clock time). */
  returnedAtMs = 0;
  ejectionTimer: ReturnType<typeof setTimeout> | null = null;
  /** The active health check marked it down. */
  healthDown = false;
  healthSuccesses = 0;
  healthFailures = 0;
  readonly requests: BoundCounter;

  constructor(
    readonly agentId: string,
    /** The configured base URL, e.g. http://10.0.0.5:8081/api/v1. */
    readonly url: string,
    public weight: number,
    /** Made by createTargetPool, or a stand-in in tests. */
    readonly pool: Pool,
    protocol: AgentProtocol = 'agent-chat',
  ) {
    const parsed = new URL(url);
    this.origin = parsed.origin;
    this.basePath = parsed.pathname.replace(/\/+$/, '');
    // An A2A agent's URL is its JSON-RPC endpoint: both routes post there, the method differs.
    const a2aPath = parsed.pathname;
    this.chatPath = protocol === 'a2a' ? a2aPath : `${this.basePath}/chat`;
    this.streamPath = protocol === 'a2a' ? a2aPath : `${this.basePath}/chat/stream`;
    this.requests = metrics.upstreamRequests.labels({ agent: agentId, target: this.origin });
  }

  get available(): boolean {
    return !this.ejected && !this.healthDown;
  }

  get state(): TargetState {
    return this.ejected ? 'ejected' : this.healthDown ? 'down' : 'up';
  }
}
