// One stdio MCP server's child process (docs/mcp.md "stdio servers"): started with a minimal
// environment (stdio-environment.ts), read line by line on stdout (bounded, stdio-lines.ts),
// its stderr read and logged rate-limited and truncated (never held), written to on stdin with
// a bound on what it has not read yet. It ends once: on exit, on a spawn failure, or when
// killed (SIGTERM, then SIGKILL after a grace); `onEnd` is told why, once.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { McpServerConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import { childEnvironment } from './stdio-environment.js';
import { LineSplitter } from './stdio-lines.js';

/** How long a child has between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 5_000;
/** What a child may leave unread on its stdin before it is taken for stuck and killed. */
const MAX_UNREAD_INPUT_BYTES = 16 * 1024 * 1024;
// stderr: at most this many log lines per window per child, each cut to this many characters.
const STDERR_LINES_PER_WINDOW = 20;
const STDERR_WINDOW_MS = 10_000;
const STDERR_MAX_CHARS = 1_024;

/** Why a child ended, as the client is told (none of the child's own words). */
export type ChildEnd = 'exited' | 'failed_to_start' | 'line_too_long' | 'input_not_read' | 'killed';

export interface ChildHooks {
  line(text: string): void;
  end(reason: ChildEnd): void;
}

export class StdioChild {
  private readonly process: ChildProcessWithoutNullStreams;
  private ended: ChildEnd | undefined;
  private readonly exited: Promise<void>;
  private stderrWindowStart = 0;
  private stderrLines = 0;
  private stderrDropped = 0;
  /** Why the gateway is killing it (reported instead of a plain exit). */
  private killReason: ChildEnd | undefined;

  constructor(
    private readonly server: McpServerConfig,
    maxLineBytes: number,
    private readonly logger: Logger,
    private readonly hooks: ChildHooks,
  ) {
    const [file, ...args] = server.command!;
    this.process = spawn(file!, args, { env: childEnvironment(server), cwd: server.cwd ?? undefined, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
    const lines = new LineSplitter(maxLineBytes, hooks.line, () => this.kill('line_too_long'));
    this.process.stdout.on('data', (chunk: Buffer) => lines.push(chunk));
    this.process.stderr.on('data', (chunk: Buffer) => this.stderr(chunk));
    // A child that stops reading, or is gone, makes stdin fail: its exit says what happened.
    this.process.stdin.on('error', () => undefined);
    this.process.stdout.on('error', () => undefined);
    this.process.stderr.on('error', () => undefined);
    this.exited = new Promise((resolve) => {
      // `on`, not `once`: a second 'error' (a failed kill) without a listener would throw in the gateway.
      this.process.on('error', (error: NodeJS.ErrnoException) => {
        // Only a spawn failure has no pid; other errors (a failed kill) are followed by exit or nothing to do.
        if (this.process.pid === undefined) {
          this.logger.warn({ mcp_server: server.name, code: error.code }, 'stdio MCP server could not be started');
          this.finish('failed_to_start');
          resolve();
        }
      });
      // 'close', not 'exit': stdout is read to its end first, so a response printed just before exiting is delivered.
      this.process.once('close', (code, signal) => {
        this.logger.info({ mcp_server: server.name, pid: this.process.pid, code, signal }, 'stdio MCP server exited');
        this.finish(this.killReason ?? 'exited');
        resolve();
      });
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get alive(): boolean {
    return this.ended === undefined;
  }

  /** One message, as one line; false when the child is gone or not reading (it is then killed). */
  write(line: Buffer): boolean {
    if (this.ended !== undefined || this.process.stdin.destroyed) return false;
    if (this.process.stdin.writableLength > MAX_UNREAD_INPUT_BYTES) {
      this.kill('input_not_read');
      return false;
    }
    this.process.stdin.write(line);
    this.process.stdin.write('\n');
    return true;
  }

  /** SIGTERM now, SIGKILL if it has not exited after the grace; resolves once it exited. */
  kill(reason: ChildEnd = 'killed'): Promise<void> {
    this.killReason ??= reason;
    if (this.process.exitCode === null && this.process.signalCode === null && this.process.pid !== undefined) {
      this.process.stdin.destroy();
      this.process.kill('SIGTERM');
      const hard = setTimeout(() => this.process.kill('SIGKILL'), reason === 'killed' ? KILL_GRACE_MS : 0);
      hard.unref();
      void this.exited.then(() => clearTimeout(hard));
    }
    return this.exited;
  }

  private finish(reason: ChildEnd): void {
    if (this.ended !== undefined) return;
    this.ended = reason;
    this.hooks.end(reason);
  }

  /** stderr is the child's log: a few lines per window reach the gateway's log, cut short; the rest is counted and dropped. */
  private stderr(chunk: Buffer): void {
    const now = Date.now();
    if (now - this.stderrWindowStart >= STDERR_WINDOW_MS) {
      this.stderrWindowStart = now;
      this.stderrLines = 0;
    }
    if (this.stderrLines >= STDERR_LINES_PER_WINDOW) {
      this.stderrDropped += chunk.length;
      return;
    }
    this.stderrLines += 1;
    const text = chunk.subarray(0, STDERR_MAX_CHARS * 4).toString('utf8').slice(0, STDERR_MAX_CHARS).trimEnd();
    this.logger.info({ mcp_server: this.server.name, pid: this.process.pid, stderr: text, stderr_bytes_dropped: this.stderrDropped }, 'stdio MCP server stderr');
    this.stderrDropped = 0;
  }
}
