import { describe, expect, it } from 'vitest';
import { heapFlagsToSet } from '../../../src/cli/v8-heap-flags.js';

describe('heapFlagsToSet', () => {
  it('turns allocation-site pretenuring off by default', () => {
    expect(heapFlagsToSet([], undefined)).toEqual(['--no-allocation-site-pretenuring']);
    expect(heapFlagsToSet(['--enable-source-maps'], '--max-old-space-size=512')).toEqual(['--no-allocation-site-pretenuring']);
  });

  it("leaves the operator's choice on the node command line alone, in either spelling", () => {
    expect(heapFlagsToSet(['--allocation-site-pretenuring'], undefined)).toEqual([]);
    expect(heapFlagsToSet(['--no-allocation-site-pretenuring'], undefined)).toEqual([]);
    expect(heapFlagsToSet(['--allocation_site_pretenuring'], undefined)).toEqual([]);
    expect(heapFlagsToSet(['--no_allocation_site_pretenuring'], undefined)).toEqual([]);
  });

  it("leaves the operator's choice in NODE_OPTIONS alone", () => {
    expect(heapFlagsToSet([], ' --max-old-space-size=512  --allocation-site-pretenuring ')).toEqual([]);
  });

  it('is not fooled by flags whose names merely contain it', () => {
    expect(heapFlagsToSet(['--trace-allocation-site-pretenuring-x'], 'allocation-site-pretenuring')).toEqual(['--no-allocation-site-pretenuring']);
  });
});
