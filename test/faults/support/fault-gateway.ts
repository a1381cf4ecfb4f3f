// The built CLI (`dist/cli/main.js serve`) as a child process for fault tests: process-level
// properties (RSS, open descriptors, handles, survival, signals) are only honest in a
// process of its own. Optionally raises `ulimit -n` for the child (10,000 idle connections).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../helpers/free-port.js';
import { CLI_PATH } from '../../helpers/gateway-process.js';

export interface ProcessSample {
  rssBytes: number;
  heapUsedBytes: number;
  openFds: number;
  activeHandles: number;
  activeStreams: number;
  maxFds: number;
}

export interface FaultGateway {
  name: string;
  url: string;
  adminUrl: string;
  port: number;
  adminPort: number;
  configPath: string;
  child: ChildProcess;
  output(): string;
  /** Every JSON log line the process wrote so far. */
  logLines(): Array<Record<string, unknown>>;
  /** RSS, heap, descriptors, handles and open streams, from the admin listener's /metrics. */
  sample(): Promise<ProcessSample>;
  alive(): boolean;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface FaultGatewayOptions {
  dir: string;
  name: string;
  /** The YAML document; listen and admin ports are filled in (kept when given, e.g. for a restart). */
  config: Record<string, unknown>;
  /** Soft `ulimit -n` for the child (capped at the hard limit). */
  fdLimit?: number;
  port?: number;
  adminPort?: number;
}

export async function startFaultGateway(options: FaultGatewayOptions): Promise<FaultGateway> {
  const { dir, name, config } = options;
  const port = options.port ?? (await freePort());
  const adminPort = options.adminPort ?? (await freePort());
  const document = {
    ...config,
    listen: { host: '127.0.0.1', ...(config.listen as object | undefined), port },
    admin: { host: '127.0.0.1', ...(config.admin as object | undefined), port: adminPort },
  };
  const configPath = join(dir, `${name}.yaml`);
  await writeFile(configPath, stringify(document));
  const args = [CLI_PATH, 'serve', '--config', configPath];
  const env = { ...process.env, REDIS_URL: '', PORT: '', LOG_FORMAT: 'json' };
  const child = options.fdLimit
    ? // exec keeps the pid: signals reach node, not bash.
      spawn('bash', ['-c', `ulimit -n ${options.fdLimit} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`, process.execPath, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = once(child, 'exit');

  const deadline = Date.now() + 20_000;
  while (!output.includes('agent-gateway listening')) {
    if (child.exitCode !== null) throw new Error(`gateway ${name} exited early (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`gateway ${name} did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }

  const adminUrl = `http://127.0.0.1:${adminPort}`;
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    adminUrl,
    port,
    adminPort,
    configPath,
    child,
    output: () => output,
    logLines: () =>
      output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            return { unparsable: line };
          }
        }),
    sample: () => sampleProcess(adminUrl),
    alive: () => child.exitCode === null && child.signalCode === null,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const [code, exitSignal] = (await exited) as [number | null, NodeJS.Signals | null];
      return { code, signal: exitSignal };
    },
  };
}

export function metricValue(text: string, series: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return Number.NaN;
}

export async function sampleProcess(adminUrl: string): Promise<ProcessSample> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  return {
    rssBytes: metricValue(text, 'process_resident_memory_bytes'),
    heapUsedBytes: metricValue(text, 'nodejs_heap_size_used_bytes'),
    openFds: metricValue(text, 'process_open_fds'),
    activeHandles: metricValue(text, 'nodejs_active_handles_total'),
    activeStreams: metricValue(text, 'agentgw_active_streams'),
    maxFds: metricValue(text, 'process_max_fds'),
  };
}

export const MB = 1024 * 1024;

export function describeSample(sample: ProcessSample): string {
  return `rss ${(sample.rssBytes / MB).toFixed(1)} MB, heap ${(sample.heapUsedBytes / MB).toFixed(1)} MB, ${sample.openFds} fds, ${sample.activeHandles} handles, ${sample.activeStreams} streams`;
}
