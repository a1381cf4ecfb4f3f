// Holding idle streams, shared by scenario 4 (bench/scenarios/idle-streams.mjs) and its floor
// measurement (bench/scenarios/idle-floor.mjs): the client child that opens and holds them,
// memory summed over processes, and one hold on the floor — N bare node:http + undici
// processes on one port (SO_REUSEPORT), nothing else — so scenario 4's verdict compares the
// gateway with the floor measured in the same run (issue 34).
import os from 'node:os';
import { join } from 'node:path';
import { memoryKb, openFds, pssKb } from './proc-stats.mjs';
import { spawnProcess, startNodeProgram } from './processes.mjs';

/** One upstream event per stream this often: the "occasional event" of a long agent turn. */
export const EVENT_EVERY_MS = 10_000;

export function runClient({ repoRoot, tmpDir, fdLimit, url, path, headers, count, holdS, openTimeoutS, onHolding, name }) {
  return new Promise((resolve, reject) => {
    const args = [join(repoRoot, 'bench', 'lib', 'idle-streams-client.mjs'), JSON.stringify({ url, path, headers, count, rampPerSec: 1_000, openTimeoutS, holdS })];
    let result = null;
    let holdingSeen = false;
    spawnProcess({ name, command: process.execPath, args, fdLimit, logFile: join(tmpDir, `${name}.out`) }).then((handle) => {
      let buffered = '';
      handle.child.stdout.on('data', (chunk) => {
        buffered += chunk.toString('utf8');
        let nl;
        while ((nl = buffered.indexOf('\n')) !== -1) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (line.startsWith('HOLDING ') && !holdingSeen) {
            holdingSeen = true;
            void onHolding?.(JSON.parse(line.slice('HOLDING '.length)));
          } else if (line.startsWith('RESULT ')) {
            result = JSON.parse(line.slice('RESULT '.length));
          }
        }
      });
      handle.child.once('exit', (code) => {
        if (result) resolve(result);
        else reject(new Error(`${name} exited (${code}) without a result; see ${handle.logFile}`));
      });
    }, reject);
  });
}

/** RSS and VmHWM summed over processes (KiB); null when none could be read. */
export function memoryOf(pids) {
  let rssKb = 0;
  let hwmKb = 0;
  let read = 0;
  for (const pid of pids) {
    const m = memoryKb(pid);
    if (!m) continue;
    rssKb += m.rssKb;
    hwmKb += m.hwmKb;
    read += 1;
  }
  return read === 0 ? null : { rssKb, hwmKb };
}

/** PSS summed over processes (KiB); null when none could be read. */
export function pssOf(pids) {
  const values = pids.map(pssKb).filter((v) => v !== null);
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0);
}


/**
 * `processes` bare undici proxies (no cap on upstream connections) on one port in front of
 * `stubUrl`, `count` idle streams opened by scenario 4's client and held `holdS` s. `runtime`
 * is the node flags and environment the processes get (the gateway's stream-holding
 * processes get the same, so the comparison is of code, not of settings). VmHWM is read 3 s
 * after the client closes, as scenario 4 reads the gateway's.
 */
export async function holdOnFloor({ repoRoot, tmpDir, fdLimit, stubUrl, count, holdS, processes, runtime, name }) {
  const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
  const proxies = [];
  try {
    const proxyScript = join(repoRoot, 'bench/reference/bare-undici-proxy.mjs');
    let port = 0;
    for (let i = 0; i < processes; i += 1) {
      const args = ['--upstream', stubUrl, '--port', String(port), '--connections', '0', ...(processes > 1 ? ['--reuse-port'] : [])];
      const proxy = await startNodeProgram({ name: `${name}-${i}`, script: proxyScript, args, tmpDir, fdLimit, env: runtime.env, nodeArgs: runtime.nodeArgs });
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
      name: `idle-client-${name}`,
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
    return {
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
      hwmKb: memoryOf(pids)?.hwmKb ?? null,
      perStreamKb: atHold?.rssKb && baseline && result.openAtHoldStart > 0 ? (atHold.rssKb - baseline.rssKb) / result.openAtHoldStart : null,
      perStreamPssKb: atHold?.pssKb && baselinePss && result.openAtHoldStart > 0 ? (atHold.pssKb - baselinePss) / result.openAtHoldStart : null,
      loadBefore,
      loadAfter: load(),
    };
  } finally {
    for (const proxy of proxies) await proxy.stop();
  }
}
