// Per-process figures read from /proc (Linux): CPU time, resident and peak memory, children.
// The shared machine makes req/s noisy; CPU per request and peak RSS are steadier.
import { readdirSync, readFileSync } from 'node:fs';

/** utime + stime of one process in ms (clock ticks are 100 Hz on Linux); null if gone. */
export function cpuMs(pid) {
  if (!pid) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** CPU ms summed over several processes (nginx: master and workers). */
export function cpuMsOf(pids) {
  let total = 0;
  for (const pid of pids) {
    const ms = cpuMs(pid);
    if (ms === null) return null;
    total += ms;
  }
  return total;
}

/** VmRSS and VmHWM (peak RSS over the process's life) in KiB. */
export function memoryKb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
  } catch {
    return null;
  }
}

/**
 * Proportional set size in KiB: each resident page divided by the processes sharing it, so a
 * sum over processes counts the node binary's pages once, not once per process (RSS does).
 */
export function pssKb(pid) {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const pss = Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? NaN);
    return Number.isFinite(pss) ? pss : null;
  } catch {
    return null;
  }
}

/** Open file descriptors of a process (0 when it cannot be read). */
export function openFds(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/** Direct children of `ppid`, by scanning /proc (no pgrep dependency). */
export function childPids(ppid) {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid) out.push(Number(name));
    } catch {
      // The process ended between readdir and read.
    }
  }
  return out;
}
