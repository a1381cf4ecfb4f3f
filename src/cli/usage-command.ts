// `agent-gateway usage [--by key|account|agent] [--since 7d] [--granularity hour|day]
// [--key K] [--account A] [--agent G] [--json]`: the admin API's usage report
// (docs/admin-api.md "Usage") from the same rollups through the same code, as a table.
// The options are src/cli/commands/usage.ts.
import type { Command } from 'commander';
import { processTextIo } from './command-io.js';
import { openUsageSource } from '../audit/open-audit-log.js';
import { usageReport, type UsageGranularity, type UsageGroupBy, type UsageRow, type UsageSort } from '../audit/usage-report.js';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from '../config/load-config.js';
import { silentLogger } from '../logger.js';
import { createRedisClient, describeRedis, waitForRedis, type RedisClient } from '../redis/redis-client.js';

export interface UsageOptions {
  config?: string;
  by: UsageGroupBy;
  since: number;
  granularity: UsageGranularity;
  key?: string;
  account?: string;
  agent?: string;
  json?: boolean;
  sort?: UsageSort;
}

export interface UsageCommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  setExitCode: (code: number) => void;
  now?: () => number;
}

const processIo: UsageCommandIo = processTextIo;

/** `usage`'s action (its options are src/cli/commands/usage.ts). */
export function usageAction(io: UsageCommandIo = processIo) {
  return async (options: UsageOptions, command: Command): Promise<void> => {
    const configPath = options.config ?? (command.optsWithGlobals() as { config?: string }).config ?? DEFAULT_CONFIG_PATH;
    let redis: RedisClient | undefined;
    try {
      if (options.by === 'session' && options.key === undefined && options.account === undefined) throw new Error('--by session needs --key or --account: the runs of which key or account?');
      const config = await loadConfig(configPath);
      if (config.audit.redisStream && config.redis) {
        redis = createRedisClient(config.redis, silentLogger, 'agentgw-cli');
        if (!(await waitForRedis(redis, 5_000))) throw new Error(`cannot reach redis (${describeRedis(config.redis)}) within 5 s`);
      }
      const toMs = (io.now ?? Date.now)();
      const rows = await usageReport(openUsageSource(config, redis), {
        groupBy: options.by,
        granularity: options.granularity,
        fromMs: toMs - options.since,
        toMs,
        keyId: options.key,
        account: options.account,
        agent: options.agent,
        sort: options.sort,
      });
      io.stdout(options.json ? `${JSON.stringify(rows)}\n` : usageTable(rows, options.by));
    } catch (error) {
      io.stderr(error instanceof ConfigError ? `${error.message}\n` : `agent-gateway usage: ${error instanceof Error ? error.message : String(error)}\n`);
      io.setExitCode(1);
    } finally {
      redis?.disconnect();
    }
  };
}

/** A readable table: one row per group and period, errors as outcome=n. */
export function usageTable(rows: readonly UsageRow[], by: UsageGroupBy): string {
  if (rows.length === 0) return 'no usage in this period\n';
  const header = [by.toUpperCase(), 'PERIOD', 'REQUESTS', 'TOKENS', 'COST_USD', 'TOOL_CALLS', 'ERRORS', 'P50_MS', 'P99_MS'];
  const cells = rows.map((r) => [
    // A session id is the client's text: one holding a space or a control character is quoted, so a row stays one line.
    /[\s\x00-\x1f\x7f"]/.test(r.group) ? JSON.stringify(r.group) : r.group,
    r.period,
    String(r.requests),
    String(r.tokens),
    String(r.cost_usd),
    String(r.tool_calls),
    Object.entries(r.errors).map(([outcome, n]) => `${outcome}=${n}`).join(',') || '-',
    r.latency_ms.p50 === null ? '-' : String(r.latency_ms.p50),
    r.latency_ms.p99 === null ? '-' : String(r.latency_ms.p99),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  // Numbers right-aligned, text left-aligned.
  const numeric = new Set([2, 3, 4, 5, 7, 8]);
  const line = (row: string[]) => `${row.map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : i === row.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}\n`;
  return line(header) + cells.map(line).join('');
}
