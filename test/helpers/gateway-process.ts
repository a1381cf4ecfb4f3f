// The built CLI (`dist/cli/main.js serve`) as a child process, with a YAML config written
// per test: for tests that need several gateway processes, signals or a hard kill.
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { spawnBuiltCli } from './cli.js';
import { checkAnswersFrom } from './openapi-answers.js';

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
  const cli = spawnBuiltCli(['serve', '--config', configPath], { env, nodeArgs: options.nodeArgs, fdLimit: options.fdLimit });
  const { child, output } = cli;
  await cli.waitForOutput((text) => LISTENING.test(text), 'listening', options.startTimeoutMs ?? 20_000).catch((error: Error) => {
    child.kill('SIGKILL');
    throw new Error(`gateway ${name} did not start: ${error.message}`);
  });
  const listening = LISTENING.exec(output())!;

  const port = Number(listening[1]);
  const adminPort = Number(listening[2]);
  const url = `http://127.0.0.1:${port}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  // Every answer the test fetches from either listener is checked against the OpenAPI documents.
  const unregister = [checkAnswersFrom(url, 'agent-chat'), checkAnswersFrom(adminUrl, 'admin')];
  void cli.exited.then(() => unregister.forEach((stop) => stop()));
  return {
    url,
    adminUrl,
    port,
    adminPort,
    configPath,
    child,
    output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const [code, exitSignal] = await cli.exited;
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
