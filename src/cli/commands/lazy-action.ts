// A command's action that imports its implementation only when the command runs: main.ts
// registers every command, and registering one must not load what running it needs (the
// config schema, ioredis …), or `serve`'s cluster primary would carry all of it (decision 0112).

/** An action that awaits `load()` (a dynamic import) and runs what it answers with the action's arguments. */
export function lazyAction<A extends unknown[]>(load: () => Promise<(...args: A) => unknown>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    await (await load())(...args);
  };
}
