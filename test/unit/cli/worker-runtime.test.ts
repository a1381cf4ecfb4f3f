import { describe, expect, it } from 'vitest';
import { primaryHeapFlagsToSet, WORKER_MALLOC_ARENA_MAX, WORKER_SEMI_SPACE_MB, workerEnvironment, workerExecArgv } from '../../../src/cli/worker-runtime.js';

describe('workerExecArgv', () => {
  it("adds the young-generation cap to the primary's own node flags", () => {
    expect(workerExecArgv(['--enable-source-maps'], undefined)).toEqual(['--enable-source-maps', `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`]);
  });

  it('leaves a size the operator chose alone, on the command line or in NODE_OPTIONS, in either spelling', () => {
    expect(workerExecArgv(['--max-semi-space-size=2'], undefined)).toEqual(['--max-semi-space-size=2']);
    expect(workerExecArgv(['--max_semi_space_size=2'], undefined)).toEqual(['--max_semi_space_size=2']);
    expect(workerExecArgv([], ' --max-old-space-size=512 --max-semi-space-size=32 ')).toEqual([]);
    expect(workerExecArgv(['--max-heap-size=300'], undefined)).toEqual(['--max-heap-size=300']);
  });
});

describe('workerEnvironment', () => {
  it('caps the malloc arenas unless the variable is set', () => {
    expect(workerEnvironment({})).toEqual({ MALLOC_ARENA_MAX: WORKER_MALLOC_ARENA_MAX });
    expect(workerEnvironment({ MALLOC_ARENA_MAX: '8' })).toEqual({});
  });
});

describe('primaryHeapFlagsToSet', () => {
  it("keeps the primary's young generation at its starting size unless the operator sized it", () => {
    expect(primaryHeapFlagsToSet([], undefined)).toEqual(['--semi-space-growth-factor=1']);
    expect(primaryHeapFlagsToSet(['--max-semi-space-size=4'], undefined)).toEqual([]);
    expect(primaryHeapFlagsToSet([], '--semi-space-growth-factor=2')).toEqual([]);
  });
});
