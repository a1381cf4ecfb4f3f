// V8 flags a serving gateway sets for itself before it takes traffic (decision 0010).
//
// Allocation-site pretenuring: when most objects from one allocation site survive a
// scavenge, V8 starts allocating that site's objects straight into the old generation, for
// as long as the optimized code lives. Under many concurrent requests the objects of every
// in-flight request are alive at each scavenge, so the request path's own sites qualify,
// although each request lives only milliseconds: from then on every request's objects go to
// the old generation and are reclaimed only by full mark-compact collections. Whether that
// happens depends on one early burst, which is why a process settled into a cheaper or a
// dearer state for its whole life (decision 0009). The gateway's long-lived objects are
// few (config, caches, idle streams); they lose nothing by being copied by two scavenges.
import { setFlagsFromString } from 'node:v8';

const PRETENURING = 'allocation-site-pretenuring';

/** V8 accepts `_` for `-` in flag names; compares the bare name of a `--[no-]flag[=value]` argument. */
function flagName(arg: string): string {
  return arg.replace(/^--/, '').replace(/=.*$/, '').replaceAll('_', '-').replace(/^no-/, '');
}

/**
 * The flags to set: every flag of ours unless the operator chose a value for it on the
 * node command line or in NODE_OPTIONS (`node --allocation-site-pretenuring …` keeps V8's
 * default).
 */
export function heapFlagsToSet(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return chosenNodeFlags(execArgv, nodeOptions).includes(PRETENURING) ? [] : [`--no-${PRETENURING}`];
}

/** The bare names of the flags the operator gave node, on its command line or in NODE_OPTIONS. */
export function chosenNodeFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].filter((arg) => arg.startsWith('--')).map(flagName);
}

/** Sets them for this process. Only for the serving process: a library embedder keeps its own. */
export function applyHeapFlags(): string[] {
  const flags = heapFlagsToSet(process.execArgv, process.env.NODE_OPTIONS);
  for (const flag of flags) setFlagsFromString(flag);
  return flags;
}
