// `agent-gateway audit tail` against the JSON Lines file sink: in process for the options,
// and as the built bin to show it exits on its own (no --follow) and on SIGINT (--follow).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BatchingAuditLog } from '../../src/audit/batching-audit-log.js';
import { FileAuditSink } from '../../src/audit/file-audit-sink.js';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/logger.js';
import { idOfLine, makeLines, makeRecord, makeRecords } from '../helpers/audit-records.js';
import { runAuditTail } from '../helpers/audit-tail.js';
import { runBuiltCli, spawnBuiltCli } from '../helpers/cli.js';

const idsOf = (from: number, count: number): string[] => makeRecords(from, count).map((r) => r.id);

describe('audit tail (file sink)', () => {
  let dir: string;
  let configPath: string;
  let auditFile: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentgw-audit-tail-'));
    auditFile = join(dir, 'audit.jsonl');
    configPath = join(dir, 'gateway.yaml');
    await writeFile(configPath, `agents:\n  support: { upstream: "http://127.0.0.1:8081/api/v1" }\naudit: { file: "${auditFile}", spool: "${join(dir, 'spool.jsonl')}" }\n`);
    // Written by the gateway's own audit log, as in production.
    const log = new BatchingAuditLog({ sinks: [new FileAuditSink(auditFile)], spoolPath: join(dir, 'spool.jsonl'), batchSize: 64, flushIntervalMs: 10, maxQueue: 1000, logger: silentLogger, clock: systemClock });
    for (const record of makeRecords(0, 100)) log.record(record);
    await log.close();
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('prints the last 20 records by default, oldest first', async () => {
    const { lines, exitCode } = await runAuditTail(['--config', configPath]);
    expect(exitCode).toBeUndefined();
    expect(lines.map(idOfLine)).toEqual(idsOf(80, 20));
    expect(JSON.parse(lines[0]!)).toEqual(makeRecord(80));
  });

  it('honours --limit and --key together', async () => {
    const { lines } = await runAuditTail(['--config', configPath, '--key', 'key_even', '--limit', '4']);
    expect(lines.map(idOfLine)).toEqual([92, 94, 96, 98].map((n) => makeRecord(n).id));
  });

  it('rejects a --limit that is not a whole number', async () => {
    await expect(runAuditTail(['--config', configPath, '--limit', 'lots'])).rejects.toThrow(/whole number/);
  });

  it('reports an unreadable config with exit code 1', async () => {
    const { exitCode, stderr } = await runAuditTail(['--config', join(dir, 'missing.yaml')]);
    expect(exitCode).toBe(1);
    expect(stderr).toMatch(/missing\.yaml/);
  });

  it('as the built bin: prints and exits 0 by itself without --follow', async () => {
    const { code, stdout: out } = await runBuiltCli(['audit', 'tail', '--config', configPath, '--limit', '3']);
    expect(code).toBe(0);
    expect(out.split('\n').filter(Boolean).map(idOfLine)).toEqual(idsOf(97, 3));
  });

  it('as the built bin: --follow prints appended records and exits 0 on SIGINT', async () => {
    const { child, stdout, exited } = spawnBuiltCli(['audit', 'tail', '--config', configPath, '--limit', '1', '--follow', '--key', 'key_odd']);
    try {
      // The first wait includes the bin's start, seconds on a loaded machine.
      await vi.waitFor(() => expect(stdout().split('\n').filter(Boolean).map(idOfLine)).toEqual([makeRecord(99).id]), { timeout: 20_000 });
      const sink = new FileAuditSink(auditFile);
      await sink.write(makeLines(100, 4));
      await sink.close();
      await vi.waitFor(() => expect(stdout().split('\n').filter(Boolean).map(idOfLine)).toEqual([99, 101, 103].map((n) => makeRecord(n).id)), { timeout: 5_000 });
      child.kill('SIGINT');
      const [code] = await exited;
      expect(code).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
