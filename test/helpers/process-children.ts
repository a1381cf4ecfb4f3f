// The running children of a process whose command line holds a marker, read from /proc (Linux):
// what a test checks to see that the gateway spawned nothing, or left nothing behind.
import { readdirSync, readFileSync } from 'node:fs';

export function runningChildren(parentPid: number, marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (in parentheses, which may hold spaces): state, ppid, ...
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== parentPid || fields[0] === 'Z') continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) pids.push(Number(entry));
    } catch {
      // The process ended while being read.
    }
  }
  return pids;
}
