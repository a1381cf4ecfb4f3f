// The built CLI (`dist/cli/main.js serve`) as a child process, with a YAML config written
// per test: for tests that need several gateway processes, signals or a hard kill.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { checkAnswersFrom } from './openapi-answers.js';

export const CLI_PATH = join(process.cwd(), 'dist/cli/main.js');
/** The line `serve` prints once both listeners are bound (one process or a cluster's primary). */
const LISTENING = /agent-gateway listening on https?:\/\/[^\s]+:(\d+) \(admin :(\d+)/;

export interface GatewayProcess {
  url: string;
  adminUrl: string;
  port: number;
  adminPort: number;
  configPath: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Sends a signal and waits for the exit (SIGKILL for a crash). */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Writes `config` (YAML document; listen/admin ports are filled in) to `dir/<name>.yaml`
 * and starts `serve` with it, resolving once the gateway is listening.
 */
export interface GatewayProcessOptions {
  /** Ports to reuse (a restart); free ones otherwise. */
  port?: number;
  adminPort?: number;
  /** Soft `ulimit -n` for the child (falls back to the hard limit). */
  fdLimit?: number;
  /** How long the child may take to print its listening line (default 20 s; module loading alone takes 5–10 s on a loaded shared machine). */
  startTimeoutMs?: number;
  /** Node flags before the CLI's path (e.g. `--inspect=127.0.0.1:0` for a test that reads the process's retained memory). */
  nodeArgs?: string[];
}

export async function startGatewayProcess(
  dir: string,
  name: string,
  config: Record<string, unknown>,
  env: NodeJS.ProcessEnv = {},
  options: GatewayProcessOptions = {},
): Promise<GatewayProcess> {
  // Port 0 unless a restart reuses one: the gateway binds and prints what it got. A port
  // found free beforehand could be taken (by another test's outgoing connection) before
  // the child binds it, which failed CI runs with EADDRINUSE.
  const requestedPort = options.port ?? 0;
  const requestedAdminPort = options.adminPort ?? 0;
  const document = {
    ...config,
    listen: { host: '127.0.0.1', ...(config.listen as object | undefined), port: requestedPort },
    admin: { host: '127.0.0.1', ...(config.admin as object | undefined), port: requestedAdminPort },
  };
  const configPath = join(dir, `${name}.yaml`);
  await writeFile(configPath, stringify(document));
  const args = [...(options.nodeArgs ?? []), CLI_PATH, 'serve', '--config', configPath];
  const spawnOptions = { env: { ...process.env, REDIS_URL: '', PORT: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'] };
  const child = options.fdLimit
    ? // exec keeps the pid: signals reach node, not bash.
      spawn('bash', ['-c', `ulimit -n ${options.fdLimit} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`, process.execPath, ...args], spawnOptions)
    : spawn(process.execPath, args, spawnOptions);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = once(child, 'exit');

  const deadline = Date.now() + (options.startTimeoutMs ?? 20_000);
  let listening: RegExpExecArray | null = null;
  while ((listening = LISTENING.exec(output)) === null) {
    if (child.exitCode !== null) throw new Error(`gateway ${name} exited early (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`gateway ${name} did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }

  const port = Number(listening[1]);
  const adminPort = Number(listening[2]);
  const url = `http://127.0.0.1:${port}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  // Every answer the test fetches from either listener is checked against the OpenAPI documents.
  const unregister = [checkAnswersFrom(url, 'agent-chat'), checkAnswersFrom(adminUrl, 'admin')];
  void exited.then(() => unregister.forEach((stop) => stop()));
  return {
    url,
    adminUrl,
    port,
    adminPort,
    configPath,
    child,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const [code, exitSignal] = (await exited) as [number | null, NodeJS.Signals | null];
      return { code, signal: exitSignal };
    },
  };
}

/**
 * The config of one of several gateway processes sharing a Redis (keys in Redis, its own
 * audit files in `dir`), with agent `support` on `upstreamBaseUrl`.
 */
export function sharedRedisGatewayConfig(options: { redisUrl: string; prefix: string; plans: Record<string, unknown>; upstreamBaseUrl: string; dir: string; name: string }): Record<string, unknown> {
  const { redisUrl, prefix, plans, upstreamBaseUrl, dir, name } = options;
  return {
    redis: { url: redisUrl, prefix, command_timeout: '2s' },
    plans,
    agents: { support: { upstream: upstreamBaseUrl } },
    keys: { store: 'redis', cache_ttl: '10m' },
    audit: { file: join(dir, `${name}-audit.jsonl`), spool: join(dir, `${name}-spool.jsonl`) },
    log: { level: 'warn' },
    shutdown_grace: '1s',
  };
}
