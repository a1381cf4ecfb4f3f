// The short soak that runs in CI: scripts/soak.mjs for 20 s (every kind of traffic against the
// built gateway process, with Redis when available). It must end with no unexpected answer,
// no lost audit record, a clean exit, flat memory after warm-up, and descriptors, handles and
// streams back near their baseline once traffic stops. `npm run soak` is the long version.
import { spawn } from 'node:child_process';
import { trackChildProcess } from '../helpers/child-processes.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reportRow } from '../helpers/faults/report.js';

const DURATION = process.env.SOAK_SHORT_DURATION ?? '20s';

interface SoakSummary {
  requests: number;
  unexpected: number;
  unexpectedExamples: string[];
  audited: number;
  auditMissing: number;
  gatewayAliveAtEnd: boolean;
  gatewayExit: { code: number | null; signal: string | null };
  badLogLines: string[];
  runnerOpenAtEnd: number;
  baseline: { rssMb: number; fds: number; handles: number };
  idle: { rssMb: number; fds: number; handles: number; streams: number };
  samples: Array<{ t: number; rssMb: number; heapMb: number }>;
  rssGrowthAfterWarmupMb: number;
  heapGrowthAfterWarmupMb: number;
  rssSlopeMbPerMin: number;
  redis: boolean;
}

function runSoak(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // Not flat out: the rest of the suite shares the two CI cores, and some of it times things.
    // Its own process group: if this test fails or times out, the cleanup ends the soak's
    // gateway and Redis with it (test/helpers/child-processes.ts).
    const child = trackChildProcess(
      spawn(process.execPath, [join(process.cwd(), 'scripts/soak.mjs'), '--duration', DURATION, '--sample', '2s', '--concurrency', '16', '--think', '10ms', '--json'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SOAK_DURATION: '' }, detached: true }),
      { group: true },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('short soak (scripts/soak.mjs)', () => {
  it(`${DURATION} of mixed traffic: no unexpected answer, no lost record, flat memory, nothing left open`, async () => {
    const { code, stdout, stderr } = await runSoak();
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as SoakSummary;
    reportRow({
      fault: `short soak, ${DURATION} (CI), ${summary.redis ? 'with Redis' : 'embedded'}`,
      answered: `${summary.requests} requests, ${summary.unexpected} unexpected answers`,
      affected: '0 unexpected',
      auditLost: `${summary.auditMissing}/${summary.audited}`,
      memory: `rss ${summary.samples.map((s) => s.rssMb.toFixed(0)).join(' → ')} MB (growth after warm-up ${summary.rssGrowthAfterWarmupMb} MB); heap after GC ${summary.samples.map((s) => s.heapMb.toFixed(0)).join(' → ')} MB; idle: ${summary.idle.fds} fds / ${summary.idle.handles} handles (baseline ${summary.baseline.fds} / ${summary.baseline.handles})`,
    });
    const context = stderr.slice(-3_000);
    expect(summary.unexpectedExamples, context).toEqual([]);
    expect(summary.unexpected).toBe(0);
    expect(summary.requests).toBeGreaterThan(500);
    expect(summary.auditMissing, context).toBe(0);
    expect(summary.gatewayAliveAtEnd).toBe(true);
    expect(summary.gatewayExit).toEqual({ code: 0, signal: null });
    expect(summary.badLogLines).toEqual([]);
    expect(summary.runnerOpenAtEnd).toBe(0);
    // Flat once warm: the heap after a full GC (what is retained) barely moves, and RSS has no
    // trend beyond allocator noise (generous, for a shared 2-core box).
    expect(summary.heapGrowthAfterWarmupMb, context).toBeLessThan(8);
    expect(summary.rssGrowthAfterWarmupMb, context).toBeLessThan(40);
    expect(summary.idle.streams).toBe(0);
    expect(summary.idle.fds - summary.baseline.fds, context).toBeLessThan(20);
    expect(summary.idle.handles - summary.baseline.handles, context).toBeLessThan(20);
    expect(code, context).toBe(0);
  }, 90_000);
});
