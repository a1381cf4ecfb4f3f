// The test helper that reads MONITOR on a plain socket (test/helpers/redis-monitor.ts) reads
// arguments as Redis writes them (sdscatrepr: quotes, backslash escapes, \xHH for the rest).
import { describe, expect, it } from 'vitest';
import { monitorArguments } from '../../helpers/redis-monitor.js';

describe('MONITOR lines', () => {
  it('unquote and unescape every argument', () => {
    expect(monitorArguments('"evalsha" "abc" "1" "rl:{a}:minute"')).toEqual(['evalsha', 'abc', '1', 'rl:{a}:minute']);
    expect(monitorArguments(String.raw`"set" "a\"b" "\x00\xff" "x\\y" "l1\nl2\r\t"`)).toEqual(['set', 'a"b', '\x00\xff', 'x\\y', 'l1\nl2\r\t']);
    expect(monitorArguments('"echo" ""')).toEqual(['echo', '']);
  });
});
