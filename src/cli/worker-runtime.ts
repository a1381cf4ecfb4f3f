// How the cluster primary starts its workers' runtime (`serve --workers N`): a worker holds
// the instance's streams, so its memory per held stream is what decides how many streams fit
// (docs/decisions/0028-worker-runtime-memory.md). Two settings that only take effect when a
// process starts, so the primary passes them on the fork:
//
// - V8's young generation. Node 24's default cap is many times what a held stream needs, and
//   a burst of new streams grows it to that cap, which it keeps while the streams are held.
//   A worker gets a smaller cap (WORKER_SEMI_SPACE_MB) unless the operator chose one.
// - glibc's malloc arenas. Every thread that allocates gets an arena of its own (up to 8 per
//   core); the native buffers of thousands of sockets then spread over several arenas and
//   their free space cannot be shared. A worker gets MALLOC_ARENA_MAX unless it is set.
//
// The operator's own node flags (on the command line or in NODE_OPTIONS) and environment
// always win. Other C libraries ignore the variable.
import { chosenNodeFlags } from './v8-heap-flags.js';

/** Each of a worker's two semi-spaces, in MiB (V8's `--max-semi-space-size`). */
export const WORKER_SEMI_SPACE_MB = 8;
/** glibc's arena cap for a worker (its default is 8 per core). */
export const WORKER_MALLOC_ARENA_MAX = '2';

/** Flags that set the young generation's size: any of them means the operator chose it. */
const YOUNG_GENERATION_FLAGS = ['max-semi-space-size', 'semi-space-size', 'min-semi-space-size', 'max-heap-size'];

/** The node flags a worker is forked with: the primary's own, plus the young-generation cap unless chosen. */
export function workerExecArgv(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const chosen = chosenNodeFlags(execArgv, nodeOptions);
  const own = YOUNG_GENERATION_FLAGS.some((flag) => chosen.includes(flag)) ? [] : [`--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];
  return [...execArgv, ...own];
}

/**
 * The primary's own young generation: it serves no traffic, so it keeps the size V8 starts
 * with instead of growing it (a flag V8 reads whenever it would grow, so it can be set at
 * run time, unlike the semi-space cap). Left alone when the operator chose a size.
 */
export function primaryHeapFlagsToSet(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const chosen = chosenNodeFlags(execArgv, nodeOptions);
  return [...YOUNG_GENERATION_FLAGS, 'semi-space-growth-factor'].some((flag) => chosen.includes(flag)) ? [] : ['--semi-space-growth-factor=1'];
}

/** Environment a worker adds to the primary's (cluster.fork merges it): the arena cap unless set. */
export function workerEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  return env.MALLOC_ARENA_MAX === undefined ? { MALLOC_ARENA_MAX: WORKER_MALLOC_ARENA_MAX } : {};
}
