// The built CLI (`dist/cli/main.js serve`) as a child process for fault tests: process-level
// properties (RSS, open descriptors, handles, survival, signals) are only honest in a
// process of its own. Optionally raises `ulimit -n` for the child (10,000 idle connections).
import { startGatewayProcess, type GatewayProcess } from '../gateway-process.js';
import { metricsText, metricValue } from '../metrics-text.js';
import { connectInspector, inspectorUrlIn, type RetainedMemory } from '../../../scripts/inspector-gc.mjs';

export interface ProcessSample {
  rssBytes: number;
  heapUsedBytes: number;
  openFds: number;
  activeHandles: number;
  activeStreams: number;
  maxFds: number;
}

export interface FaultGateway extends GatewayProcess {
  name: string;
  /** Every JSON log line the process wrote so far. */
  logLines(): Array<Record<string, unknown>>;
  /** RSS, heap, descriptors, handles and open streams, from the admin listener's /metrics. */
  sample(): Promise<ProcessSample>;
  /** Heap and external memory after a full collection (only with `inspect`; scripts/inspector-gc.mjs says why). */
  retained(): Promise<RetainedMemory>;
  alive(): boolean;
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
  startTimeoutMs?: number;
  /** Opens the child's V8 inspector on loopback, for retained(). */
  inspect?: boolean;
}

export async function startFaultGateway(options: FaultGatewayOptions): Promise<FaultGateway> {
  const { dir, name, config } = options;
  const base = await startGatewayProcess(dir, name, config, { LOG_FORMAT: 'json' }, {
    port: options.port,
    adminPort: options.adminPort,
    fdLimit: options.fdLimit,
    startTimeoutMs: options.startTimeoutMs,
    nodeArgs: options.inspect ? ['--inspect=127.0.0.1:0'] : [],
  });
  const { child } = base;
  return {
    ...base,
    name,
    logLines: () =>
      base
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            return { unparsable: line };
          }
        }),
    sample: () => sampleProcess(base.adminUrl),
    retained: async () => {
      const url = inspectorUrlIn(base.output());
      if (url === undefined) throw new Error(`${name}: no inspector (start it with inspect: true)`);
      const inspector = await connectInspector(url);
      try {
        return await inspector.collectGarbage();
      } finally {
        inspector.close();
      }
    },
    alive: () => child.exitCode === null && child.signalCode === null,
  };
}

export async function sampleProcess(adminUrl: string): Promise<ProcessSample> {
  const text = await metricsText(adminUrl);
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
