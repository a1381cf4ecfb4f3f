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
import { holdOnFloor } from '../lib/idle-hold.mjs';
import { hardFdLimit } from '../lib/machine.mjs';
import { startStubRunner, stopAll } from '../lib/processes.mjs';
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
  const RUNTIMES = {
    worker: { nodeArgs: ['--max-semi-space-size=8'], env: { MALLOC_ARENA_MAX: '2' } },
    default: { nodeArgs: [], env: {} },
  };

  const tmpDir = mkdtempSync(join(os.tmpdir(), 'idle-floor-'));
  const fdLimit = hardFdLimit();
  const mib = (kb) => (kb === null || kb === undefined ? '?' : (kb / 1024).toFixed(0));

  async function measure(variant, round) {
    const runtime = RUNTIMES[variant];
    if (!runtime) throw new Error(`unknown variant ${variant} (worker|default)`);
    const stub = await startStubRunner({ tmpDir, fdLimit, name: `stub-${variant}-${round}` });
    try {
      const row = { variant, round, ...(await holdOnFloor({ repoRoot, tmpDir, fdLimit, stubUrl: stub.url, count, holdS, processes, runtime, name: `floor-${variant}-${round}` })) };
      const { atHold } = row;
      process.stdout.write(
        `floor ${variant} (${processes} processes, round ${round}): open ${row.openAtHoldStart}/${count} (all open after ${row.allOpenMs ?? '–'} ms), errors ${row.errors} ${JSON.stringify(row.errorKinds)}, ` +
          `RSS ${mib(row.baselineRssKb)} → ${mib(atHold?.rssKb)} MiB at hold, VmHWM ${mib(row.hwmKb)} MiB, PSS ${mib(row.baselinePssKb)} → ${mib(atHold?.pssKb)} MiB, ` +
          `${row.perStreamKb?.toFixed(1) ?? '?'} KiB a stream (PSS ${row.perStreamPssKb?.toFixed(1) ?? '?'}), split ${atHold?.perProcess.map((p) => p.streams).join(' / ') ?? '?'}, ` +
          `per process RSS (PSS) at hold ${atHold?.perProcess.map((p) => `${mib(p.rssKb)} (${mib(p.pssKb)})`).join(', ') ?? '?'}; load ${row.loadBefore} → ${row.loadAfter}\n`,
      );
      process.stdout.write(`JSON ${JSON.stringify(row)}\n`);
      return row;
    } finally {
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
