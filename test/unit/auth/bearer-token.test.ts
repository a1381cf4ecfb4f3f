import { describe, expect, it } from 'vitest';
import { extractBearerToken } from '../../../src/auth/bearer-token.js';

const KEY = 'ha_abc';

describe('extractBearerToken', () => {
  it.each([
    ['Bearer ha_abc', KEY],
    ['bearer ha_abc', KEY],
    ['BEARER ha_abc', KEY],
    ['bEaReR ha_abc', KEY],
    ['  Bearer ha_abc  ', KEY],
    ['\tBearer\tha_abc\t', KEY],
    ['Bearer     ha_abc', KEY],
  ])('accepts %j', (header, token) => {
    expect(extractBearerToken(header)).toBe(token);
  });

  it.each([[undefined], [''], ['   '], ['Bearer'], ['Bearer   '], ['Basic dXNlcjpwYXNz'], ['ha_abc'], ['Bearerha_abc'], ['Token ha_abc'], ['Bearer: ha_abc']])(
    'finds no bearer credential in %j',
    (header) => {
      expect(extractBearerToken(header)).toBe('');
    },
  );

  it('returns a token with inner whitespace as is, so the format check rejects it', () => {
    expect(extractBearerToken('Bearer ha_abc extra')).toBe('ha_abc extra');
  });
});
