// The IPC messages between `serve --workers N`'s primary and its workers (decision 0112). The
// primary reads no config: the workers tell it what it needs (their port, shutdown_grace, the
// log settings) and why one could not start; worker 1, the admin worker, asks it for every
// worker's metrics and for the instance's state. One encoder and one typed decoder per
// message; every message carries the protocol's name and version, and a decoder answers
// undefined for anything else (another library's messages share the channel, and a message
// of another version is not guessed at).
//
// This file imports nothing: the primary loads it, and the primary must stay thin.

const PROTOCOL = 'agentgw-cluster';
/** Raised when a message's shape changes; both ends are always the same build, so no negotiation. */
const VERSION = 1;

type Body = Record<string, unknown>;

function envelope(type: string, body: Body): Body {
  return { protocol: PROTOCOL, v: VERSION, type, ...body };
}

/** The message's fields when it is this protocol's `type`; undefined for anything else. */
function bodyOf(message: unknown, type: string): Body | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const body = message as Body;
  return body.protocol === PROTOCOL && body.v === VERSION && body.type === type ? body : undefined;
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isPort = (value: unknown): value is number => isCount(value) && value <= 65_535;
const isText = (value: unknown): value is string => typeof value === 'string';
const isTextOrNull = (value: unknown): value is string | null => value === null || typeof value === 'string';

// ---- worker → primary --------------------------------------------------------------------

/** What the primary needs from the config a worker runs (at start and after each reload). */
export interface WorkerSettings {
  shutdownGraceMs: number;
  logLevel: string;
  logFile: string | null;
}

function settingsOf(body: Body): WorkerSettings | undefined {
  const { shutdownGraceMs, logLevel, logFile } = body;
  return isCount(shutdownGraceMs) && isText(logLevel) && isTextOrNull(logFile) ? { shutdownGraceMs, logLevel, logFile } : undefined;
}

export function encodeWorkerSettings(settings: WorkerSettings): Body {
  return envelope('worker-settings', { ...settings });
}

export function decodeWorkerSettings(message: unknown): WorkerSettings | undefined {
  const body = bodyOf(message, 'worker-settings');
  return body && settingsOf(body);
}

/** A worker listens: its public port, and for the admin worker the admin port. */
export interface WorkerListening extends WorkerSettings {
  port: number;
  /** Set by the admin worker (worker 1) only. */
  adminPort: number | null;
  host: string;
  tls: boolean;
  mode: 'redis' | 'embedded';
  /** `serve --demo`: where the admin worker's demo agent listens. */
  demoAgentUrl: string | null;
}

export function encodeWorkerListening(listening: WorkerListening): Body {
  return envelope('worker-listening', { ...listening });
}

export function decodeWorkerListening(message: unknown): WorkerListening | undefined {
  const body = bodyOf(message, 'worker-listening');
  const settings = body && settingsOf(body);
  if (!body || !settings) return undefined;
  const { port, adminPort, host, tls, mode, demoAgentUrl } = body;
  if (!isPort(port) || !(adminPort === null || isPort(adminPort)) || !isText(host) || typeof tls !== 'boolean' || (mode !== 'redis' && mode !== 'embedded') || !isTextOrNull(demoAgentUrl)) return undefined;
  return { ...settings, port, adminPort, host, tls, mode, demoAgentUrl };
}

/** A worker cannot start (a refused config, a port it cannot bind): the text the operator reads. */
export function encodeStartFailed(text: string): Body {
  return envelope('start-failed', { text });
}

export function decodeStartFailed(message: unknown): { text: string } | undefined {
  const body = bodyOf(message, 'start-failed');
  return body && isText(body.text) ? { text: body.text } : undefined;
}

/** The admin worker asks for every worker's metrics (`id` pairs the answer with the request). */
export function encodeMetricsRequest(id: number): Body {
  return envelope('metrics-request', { id });
}

export function decodeMetricsRequest(message: unknown): { id: number } | undefined {
  const body = bodyOf(message, 'metrics-request');
  return body && isCount(body.id) ? { id: body.id } : undefined;
}

/** A worker's answer to `metrics-collect`: its registry as prom-client's JSON. */
export function encodeMetricsPart(id: number, metrics: readonly unknown[]): Body {
  return envelope('metrics-part', { id, metrics });
}

export function decodeMetricsPart(message: unknown): { id: number; metrics: unknown[] } | undefined {
  const body = bodyOf(message, 'metrics-part');
  return body && isCount(body.id) && Array.isArray(body.metrics) ? { id: body.id, metrics: body.metrics as unknown[] } : undefined;
}

/** The admin worker asks how many workers listen (for /readyz). */
export function encodeStatusRequest(id: number): Body {
  return envelope('status-request', { id });
}

export function decodeStatusRequest(message: unknown): { id: number } | undefined {
  const body = bodyOf(message, 'status-request');
  return body && isCount(body.id) ? { id: body.id } : undefined;
}

// ---- primary → worker --------------------------------------------------------------------

/** The primary asks one worker for its registry. */
export function encodeMetricsCollect(id: number): Body {
  return envelope('metrics-collect', { id });
}

export function decodeMetricsCollect(message: unknown): { id: number } | undefined {
  const body = bodyOf(message, 'metrics-collect');
  return body && isCount(body.id) ? { id: body.id } : undefined;
}

/** Every answering worker's registry, for the admin worker to aggregate. */
export function encodeMetricsGathered(id: number, parts: readonly unknown[][]): Body {
  return envelope('metrics-gathered', { id, parts });
}

export function decodeMetricsGathered(message: unknown): { id: number; parts: unknown[][] } | undefined {
  const body = bodyOf(message, 'metrics-gathered');
  if (!body || !isCount(body.id) || !Array.isArray(body.parts) || !body.parts.every((part) => Array.isArray(part))) return undefined;
  return { id: body.id, parts: body.parts as unknown[][] };
}

/** The instance as the primary sees it. */
export interface InstanceStatus {
  workers: number;
  listening: number;
  stopping: boolean;
}

export function encodeInstanceStatus(id: number, status: InstanceStatus): Body {
  return envelope('instance-status', { id, ...status });
}

export function decodeInstanceStatus(message: unknown): ({ id: number } & InstanceStatus) | undefined {
  const body = bodyOf(message, 'instance-status');
  if (!body) return undefined;
  const { id, workers, listening, stopping } = body;
  return isCount(id) && isCount(workers) && isCount(listening) && typeof stopping === 'boolean' ? { id, workers, listening, stopping } : undefined;
}
