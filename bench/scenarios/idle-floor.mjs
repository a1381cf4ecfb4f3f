// The floor of scenario 4, measured rather than estimated: N bare node:http + undici
// processes (bench/reference/bare-undici-proxy.mjs, no cap on upstream connections) sharing
// one port with SO_REUSEPORT, no primary, nothing else, holding `--streams` idle streams
// opened by scenario 4's own client (1,000 a second, one upstream event per stream every
// 10 s). One process cannot hold 10,000 streams where `ulimit -Hn` is 20,000, so two is the
// least any Node gateway needs here (docs/decisions/0030-two-instances-on-one-port.md).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hardFdLimit } from '../lib/machine.mjs';
import { memoryKb, openFds, pssKb } from '../lib/proc-stats.mjs';
import { startNodeProgram, startStubRunner, stopAll } from '../lib/processes.mjs';
import { memoryOf, pssOf, runClient } from './idle-streams.mjs';
import { hasFlag, readOption } from '../reference/cli-args.mjs';

const repoRoot = join(fileURLToPath(import.meta.url), '..', '..', '..');

export const USAGE = `node bench/run.mjs idle-floor [--streams 10000] [--hold-s 30] [--processes 2] [--variants worker,default] [--rounds 1] [--keep-tmp]

  --streams N      idle streams opened (default 10000), 1,000 a second
  --hold-s S       how long they are held once open (default 30)
  --processes N    bare undici processes on one port with SO_REUSEPORT (default 2)
  --variants LIST  worker = the runtime settings serve --workers gives its workers
                   (--max-semi-space-size=8, MALLOC_ARENA_MAX=2; decision 0028); default =
                   node's defaults (default: worker,default)
  --rounds N       rounds; variants alternate their order round by round (default 1)
  --keep-tmp       keep the processes' logs

  Prints, per variant: summed RSS before and at the hold, summed VmHWM (read 3 s after the
  client closed, as scenario 4 does), PSS, KiB a stream, errors, and how the kernel split the
  streams (open descriptors over each process's idle count, halved: a socket each side).
`;

export async function run(argv) {
  const count = Number(readOption(argv, 'streams', undefined, '10000'));
  const holdS = Number(readOption(argv, 'hold-s', undefined, '30'));
  const processes = Number(readOption(argv, 'processes', undefined, '2'));
  const rounds = Number(readOption(argv, 'rounds', undefined, '1'));
  const variants = readOption(argv, 'variants', undefined, 'worker,default').split(',');
  const EVENT_EVERY_MS = 10_000;
  const RUNTIMES = {
    worker: { nodeArgs: ['--max-semi-space-size=8'], env: { MALLOC_ARENA_MAX: '2' } },
    default: { nodeArgs: [], env: {} },
  };

  const tmpDir = mkdtempSync(join(os.tmpdir(), 'idle-floor-'));
  const fdLimit = hardFdLimit();
  const mib = (kb) => (kb === null || kb === undefined ? '?' : (kb / 1024).toFixed(0));
  const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

  async function measure(variant, round) {
    const runtime = RUNTIMES[variant];
    if (!runtime) throw new Error(`unknown variant ${variant} (worker|default)`);
    const stub = await startStubRunner({ tmpDir, fdLimit, name: `stub-${variant}-${round}` });
    const stubUrl = stub.url;
    const proxies = [];
    try {
      const proxyScript = join(repoRoot, 'bench/reference/bare-undici-proxy.mjs');
      let port = 0;
      for (let i = 0; i < processes; i += 1) {
        const proxy = await startNodeProgram({ name: `floor-${variant}-${round}-${i}`, script: proxyScript, args: ['--upstream', stubUrl, '--port', String(port), '--connections', '0', '--reuse-port'], tmpDir, fdLimit, env: runtime.env, nodeArgs: runtime.nodeArgs });
        port = proxy.port;
        proxies.push(proxy);
      }
      const pids = proxies.map((p) => p.pid);
      // Let the processes settle after start before the baseline.
      await new Promise((r) => setTimeout(r, 2_000));
      const baseline = memoryOf(pids);
      const baselinePss = pssOf(pids);
      const baselineFds = pids.map(openFds);
      const loadBefore = load();
      let atHold = null;
      const result = await runClient({
        repoRoot,
        tmpDir,
        fdLimit,
        name: `idle-client-floor-${variant}-${round}`,
        url: `http://127.0.0.1:${port}`,
        path: '/api/v1/chat/stream',
        headers: { 'x-bench-stream': `idle=1&eventEveryMs=${EVENT_EVERY_MS}` },
        count,
        holdS,
        openTimeoutS: Math.max(10, count / 500),
        onHolding: () => {
          atHold = {
            rssKb: memoryOf(pids)?.rssKb ?? null,
            pssKb: pssOf(pids),
            perProcess: pids.map((pid, i) => ({ rssKb: memoryKb(pid)?.rssKb ?? null, pssKb: pssKb(pid), streams: Math.round((openFds(pid) - baselineFds[i]) / 2) })),
            load: load(),
          };
        },
      });
      await new Promise((r) => setTimeout(r, 3_000));
      const hwmKb = memoryOf(pids)?.hwmKb ?? null;
      const row = {
        variant,
        round,
        processes,
        count,
        peakOpen: result.peakOpen,
        openAtHoldStart: result.openAtHoldStart,
        errors: result.errors,
        errorKinds: result.errorKinds,
        allOpenMs: result.allOpenMs,
        heldOpenAtEnd: result.openAtHoldEnd,
        eventsDuringHold: result.eventsDuringHold,
        baselineRssKb: baseline?.rssKb ?? null,
        baselinePssKb: baselinePss,
        atHold,
        hwmKb,
        perStreamKb: atHold?.rssKb && baseline ? (atHold.rssKb - baseline.rssKb) / result.openAtHoldStart : null,
        perStreamPssKb: atHold?.pssKb && baselinePss ? (atHold.pssKb - baselinePss) / result.openAtHoldStart : null,
        loadBefore,
        loadAfter: load(),
      };
      process.stdout.write(
        `floor ${variant} (${processes} processes, round ${round}): open ${result.openAtHoldStart}/${count} (all open after ${result.allOpenMs ?? '–'} ms), errors ${result.errors} ${JSON.stringify(result.errorKinds)}, ` +
          `RSS ${mib(row.baselineRssKb)} → ${mib(atHold?.rssKb)} MiB at hold, VmHWM ${mib(hwmKb)} MiB, PSS ${mib(baselinePss)} → ${mib(atHold?.pssKb)} MiB, ` +
          `${row.perStreamKb?.toFixed(1) ?? '?'} KiB a stream (PSS ${row.perStreamPssKb?.toFixed(1) ?? '?'}), split ${atHold?.perProcess.map((p) => p.streams).join(' / ') ?? '?'}, ` +
          `per process RSS (PSS) at hold ${atHold?.perProcess.map((p) => `${mib(p.rssKb)} (${mib(p.pssKb)})`).join(', ') ?? '?'}; load ${loadBefore} → ${row.loadAfter}\n`,
      );
      process.stdout.write(`JSON ${JSON.stringify(row)}\n`);
      return row;
    } finally {
      for (const proxy of proxies) await proxy.stop();
      await stub.stop();
    }
  }

  try {
    for (let round = 1; round <= rounds; round += 1) {
      for (const variant of round % 2 === 1 ? variants : [...variants].reverse()) {
        await measure(variant, round);
        await new Promise((r) => setTimeout(r, 2_000));
      }
    }
  } finally {
    await stopAll();
    // The processes' logs: kept with --keep-tmp.
    if (hasFlag(argv, 'keep-tmp')) process.stdout.write(`tmp: ${tmpDir}\n`);
    else rmSync(tmpDir, { recursive: true, force: true });
  }
}
