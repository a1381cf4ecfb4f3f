// The tools a server last listed, as the MCP page shows them (src/mcp/listed-tools.ts): a first
// page starts the list again, later pages add to it; at most MAX_LISTED names per server; a name
// no key scope could hold ("*", markup, too long) is left out and says so; servers a reload
// removed are forgotten.
import { describe, expect, it } from 'vitest';
import { ListedTools, MAX_LISTED } from '../../../src/mcp/listed-tools.js';

describe('ListedTools', () => {
  it('is null until a list is seen, then holds the names with the time', () => {
    const listed = new ListedTools();
    expect(listed.view('files')).toBeNull();
    listed.record('files', ['read_file', 'write_file'], true, Date.UTC(2026, 0, 2));
    expect(listed.view('files')).toEqual({ names: ['read_file', 'write_file'], truncated: false, listed_at: '2026-01-02T00:00:00.000Z' });
    expect(listed.view('git')).toBeNull();
  });

  it('starts again on a first page and adds a later page to it', () => {
    const listed = new ListedTools();
    listed.record('files', ['a', 'b'], true, 1);
    listed.record('files', ['c'], false, 2);
    expect(listed.view('files')!.names).toEqual(['a', 'b', 'c']);
    listed.record('files', ['d'], true, 3);
    expect(listed.view('files')!.names).toEqual(['d']);
  });

  it(`keeps at most ${MAX_LISTED} names, and leaves out names no scope can hold`, () => {
    const listed = new ListedTools();
    const many = Array.from({ length: MAX_LISTED + 44 }, (_, i) => `tool_${i}`);
    listed.record('files', many, true, 1);
    expect(listed.view('files')).toMatchObject({ truncated: true });
    expect(listed.view('files')!.names).toEqual(many.slice(0, MAX_LISTED));
    listed.record('files', ['ok', '*', '<img src=x>', 'x'.repeat(129), 'ok'], true, 2);
    expect(listed.view('files')).toMatchObject({ names: ['ok'], truncated: true });
  });

  it('forgets the servers a reload removed', () => {
    const listed = new ListedTools();
    listed.record('files', ['a'], true, 1);
    listed.record('git', ['b'], true, 1);
    listed.keepOnly(new Set(['git']));
    expect(listed.view('files')).toBeNull();
    expect(listed.view('git')!.names).toEqual(['b']);
  });
});
