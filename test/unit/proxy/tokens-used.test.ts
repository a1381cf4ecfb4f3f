import { describe, expect, it } from 'vitest';
import { MAX_TOKENS_USED } from '../../../src/audit/audit-record.js';
import { tokensFromChatResponse, tokensFromDoneData } from '../../../src/proxy/tokens-used.js';

describe('tokensFromDoneData', () => {
  it('reads a non-negative integer and rejects anything else', () => {
    expect(tokensFromDoneData('{"tokens_used":42}')).toBe(42);
    expect(tokensFromDoneData('{"tokens_used":-1}')).toBeNull();
    expect(tokensFromDoneData('{"tokens_used":"42"}')).toBeNull();
    expect(tokensFromDoneData('not json')).toBeNull();
    expect(tokensFromDoneData('{}')).toBeNull();
  });
});

describe('a count past the documented maximum (issue 33, finding 5)', () => {
  const answer = (tokens: string): Buffer => Buffer.from(`{"response":"hi","metadata":{"tokens_used":${tokens}}}`);
  it('is an invalid runner answer: unknown (null), from a done event and from a JSON answer', () => {
    for (const tokens of ['1e308', '10000001', '1.5', '-0.5']) {
      expect(tokensFromDoneData(`{"tokens_used":${tokens}}`)).toBeNull();
      expect(tokensFromChatResponse([answer(tokens)], answer(tokens).length)).toBeNull();
    }
    expect(tokensFromDoneData(`{"tokens_used":${MAX_TOKENS_USED}}`)).toBe(MAX_TOKENS_USED);
    expect(tokensFromChatResponse([answer('10000000')], answer('10000000').length)).toBe(10_000_000);
  });
});
