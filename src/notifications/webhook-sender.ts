// One webhook POST over undici, bounded every way a receiver could hold it: connecting, the
// answer's headers and its body each within the attempt's deadline, the whole attempt aborted
// at ATTEMPT_TIMEOUT_MS, the answer's body read and thrown away (at most DUMP_LIMIT_BYTES), and
// connections per receiver capped. Each webhook has its own connection pool (one undici Agent
// per webhook id), so two webhooks on one origin never queue behind each other's connections
// (decision 0085). A receiver that never answers costs one socket per delivery in flight until
// the deadline, nothing more.
import { Agent, request } from 'undici';

export const ATTEMPT_TIMEOUT_MS = 10_000;
const DUMP_LIMIT_BYTES = 64 * 1024;

export interface SendResult {
  status?: number;
  /** Why no status: a short code (ECONNREFUSED, timeout, ...), never the URL. */
  error?: string;
  durationMs: number;
}

export class WebhookSender {
  private readonly agents = new Map<string, Agent>();
  private readonly timeoutMs: number;
  private readonly connectionsPerOrigin: number;

  constructor(options: { connectionsPerOrigin: number; timeoutMs?: number }) {
    this.timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
    this.connectionsPerOrigin = options.connectionsPerOrigin;
  }

  private agentOf(webhook: string): Agent {
    let agent = this.agents.get(webhook);
    if (agent === undefined) {
      const timeoutMs = this.timeoutMs;
      agent = new Agent({ connections: this.connectionsPerOrigin, connect: { timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 30_000 });
      this.agents.set(webhook, agent);
    }
    return agent;
  }

  async send(webhook: string, url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    try {
      const answer = await request(url, { method: 'POST', headers, body, dispatcher: this.agentOf(webhook), signal: AbortSignal.timeout(this.timeoutMs) });
      await answer.body.dump({ limit: DUMP_LIMIT_BYTES }).catch(() => {});
      return { status: answer.statusCode, durationMs: Math.round(performance.now() - started) };
    } catch (error) {
      return { error: describeFailure(error), durationMs: Math.round(performance.now() - started) };
    }
  }

  /** Drops every connection, including ones a silent receiver holds open. */
  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((agent) => agent.destroy().catch(() => {})));
    this.agents.clear();
  }
}

function describeFailure(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'timeout';
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' ? 'timeout' : code;
    return error.name;
  }
  return 'error';
}
