// `agent-gateway audit tail [--follow] [--key KEY_ID] [--limit N] [--admin] [--config PATH]`
// (docs/audit.md): prints audit records from the configured sink as JSON Lines; with
// --admin, the admin audit trail's. The options are src/cli/commands/audit.ts.
import { once } from 'node:events';
import type { Command } from 'commander';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from '../config/load-config.js';
import { tailAuditRecords } from '../audit/read-audit-records.js';
import { silentLogger } from '../logger.js';
import { createRedisClientFactory } from '../redis/redis-client.js';

export interface AuditCommandIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Sets the process exit code (tests pass their own so they do not touch the runner's). */
  setExitCode: (code: number) => void;
}

const processIo: AuditCommandIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  setExitCode: (code) => {
    process.exitCode = code;
  },
};

export interface TailOptions {
  config?: string;
  follow?: boolean;
  key?: string;
  limit: number;
  admin?: boolean;
}

/** `audit tail`'s action (its options are src/cli/commands/audit.ts). */
export function auditTailAction(io: AuditCommandIo = processIo) {
  return async (options: TailOptions, command: Command): Promise<void> => {
    // --config may also be a program-wide option defined by the main command.
    const configPath = options.config ?? (command.optsWithGlobals() as { config?: string }).config ?? DEFAULT_CONFIG_PATH;
    await runTail(configPath, options, io);
  };
}

async function runTail(configPath: string, options: TailOptions, io: AuditCommandIo): Promise<void> {
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  let outputClosed = false;
  const onOutputError = (error: NodeJS.ErrnoException): void => {
    // `audit tail | head`: the reader went away; stop quietly.
    outputClosed = true;
    if (error.code !== 'EPIPE') io.stderr.write(`agent-gateway audit tail: ${error.message}\n`);
    controller.abort();
  };
  io.stdout.on('error', onOutputError);
  if (options.follow) {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
  const write = async (line: string): Promise<void> => {
    if (outputClosed) return;
    if (!io.stdout.write(`${line}\n`)) await once(io.stdout, 'drain', { signal: controller.signal }).catch(() => {});
  };
  try {
    const config = await loadConfig(configPath);
    // A Redis failure ends the command with its message on stderr; nothing else is logged.
    const redis = config.redis ? createRedisClientFactory(config.redis, silentLogger) : undefined;
    await tailAuditRecords(config, { limit: options.limit, keyId: options.key, follow: options.follow === true, admin: options.admin === true, signal: controller.signal, redis }, write);
  } catch (error) {
    if (error instanceof ConfigError) io.stderr.write(`${error.message}\n`);
    else io.stderr.write(`agent-gateway audit tail: ${error instanceof Error ? error.message : String(error)}\n`);
    io.setExitCode(1);
  } finally {
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
    io.stdout.removeListener('error', onOutputError);
  }
}
