// One webhook POST over undici, bounded every way a receiver could hold it: connecting, the
// answer's headers and its body each within the attempt's deadline, the whole attempt aborted
// at ATTEMPT_TIMEOUT_MS, the answer's body read and thrown away (at most DUMP_LIMIT_BYTES), and
// connections per receiver capped. A receiver that never answers costs one socket per delivery
// in flight until the deadline, nothing more.
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
  private readonly agent: Agent;

  constructor(options: { connectionsPerOrigin: number; timeoutMs?: number }) {
    const timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
    this.timeoutMs = timeoutMs;
    this.agent = new Agent({ connections: options.connectionsPerOrigin, connect: { timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 30_000 });
  }

  private readonly timeoutMs: number;

  async send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    try {
      const answer = await request(url, { method: 'POST', headers, body, dispatcher: this.agent, signal: AbortSignal.timeout(this.timeoutMs) });
      await answer.body.dump({ limit: DUMP_LIMIT_BYTES }).catch(() => {});
      return { status: answer.statusCode, durationMs: Math.round(performance.now() - started) };
    } catch (error) {
      return { error: describeFailure(error), durationMs: Math.round(performance.now() - started) };
    }
  }

  /** Drops every connection, including ones a silent receiver holds open. */
  async close(): Promise<void> {
    await this.agent.destroy().catch(() => {});
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
