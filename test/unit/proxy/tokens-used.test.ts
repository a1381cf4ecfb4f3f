import { describe, expect, it } from 'vitest';
import { tokensFromDoneData } from '../../../src/proxy/tokens-used.js';

describe('tokensFromDoneData', () => {
  it('reads a non-negative integer and rejects anything else', () => {
    expect(tokensFromDoneData('{"tokens_used":42}')).toBe(42);
    expect(tokensFromDoneData('{"tokens_used":-1}')).toBeNull();
    expect(tokensFromDoneData('{"tokens_used":"42"}')).toBeNull();
    expect(tokensFromDoneData('not json')).toBeNull();
    expect(tokensFromDoneData('{}')).toBeNull();
  });
});
