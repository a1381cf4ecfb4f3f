// Session records and the memory store (src/mcp/mcp-session-*.ts), visibility of tools by key
// scope and allow-list (tool-visibility.ts), the key codec's MCP scope and the CLI's --mcp.
import { describe, expect, it } from 'vitest';
import { mcpScopeOf } from '../../../src/cli/keys.js';
import { checkMcpScope } from '../../../src/keys/mcp-scope.js';
import { decodeSessionRecord, encodeSessionRecord } from '../../../src/mcp/mcp-session-record.js';
import { isSessionId, MemorySessionStore, newSessionId } from '../../../src/mcp/mcp-session-store.js';
import { filterListResult, visibilityFor } from '../../../src/mcp/tool-visibility.js';
import { SseMessageScanner } from '../../../src/mcp/sse-messages.js';
import { rewriteAnswer } from '../../../src/mcp/mcp-relay.js';
import type { McpServerConfig } from '../../../src/config/schema.js';

const RECORD = { server: 'files', keyId: 'key_0000000000000001', target: 'http://127.0.0.1:1/mcp', upstreamSession: 'up-1', protocol: '2025-06-18' };

describe('session records', () => {
  it('round-trip through the one encoder and decoder; other layouts and garbage read as lost', () => {
    expect(decodeSessionRecord(encodeSessionRecord(RECORD))).toEqual(RECORD);
    expect(decodeSessionRecord(encodeSessionRecord({ ...RECORD, upstreamSession: null }))).toEqual({ ...RECORD, upstreamSession: null });
    expect(decodeSessionRecord(encodeSessionRecord(RECORD).replace('"v":1', '"v":2'))).toBeUndefined();
    expect(decodeSessionRecord('{not json')).toBeUndefined();
    expect(decodeSessionRecord('{"v":1,"server":1}')).toBeUndefined();
  });

  it('ids are 192 random bits in base64url; anything else is not looked up', () => {
    const ids = new Set(Array.from({ length: 100 }, () => newSessionId()));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(isSessionId(id)).toBe(true);
    expect(isSessionId('short')).toBe(false);
    expect(isSessionId('a'.repeat(31) + '!')).toBe(false);
  });

  it('the memory store expires idle sessions, refreshes on use, and stays bounded', async () => {
    let now = 1_000;
    const store = new MemorySessionStore(() => 100, () => now, 3);
    await store.put('a', RECORD);
    now += 90;
    expect(await store.touch('a')).toEqual(RECORD);
    now += 90;
    expect(await store.touch('a')).toEqual(RECORD);
    now += 101;
    expect(await store.touch('a')).toBeUndefined();
    for (const id of ['b', 'c', 'd', 'e']) await store.put(id, RECORD);
    expect(store.size).toBe(3);
    expect(await store.touch('b')).toBeUndefined();
    await store.delete('e');
    expect(await store.touch('e')).toBeUndefined();
  });

  it('the memory store keeps aggregated sessions beside per-server ones, each read only as its own kind', async () => {
    let now = 1_000;
    const store = new MemorySessionStore(() => 100, () => now, 3);
    const aggregate = { keyId: 'key_1', protocol: '2025-06-18', client: '{}', upstreams: { files: { target: 'http://a/mcp', upstreamSession: 's' } } };
    await store.putAggregate('g', aggregate);
    await store.put('p', RECORD);
    expect(await store.touchAggregate('g')).toEqual(aggregate);
    expect(await store.touch('g')).toBeUndefined();
    expect(await store.touchAggregate('p')).toBeUndefined();
    // Re-storing a session at the bound evicts no other.
    await store.put('q', RECORD);
    await store.putAggregate('g', { ...aggregate, upstreams: {} });
    expect(store.size).toBe(3);
    expect(await store.touch('p')).toEqual(RECORD);
    now += 101;
    expect(await store.touchAggregate('g')).toBeUndefined();
  });
});

describe('SseMessageScanner, oversized events', () => {
  it('tells once per event that it skipped one for its size', () => {
    const events: string[] = [];
    let skipped = 0;
    const scanner = new SseMessageScanner((event) => events.push(event.data), 16, () => (skipped += 1));
    scanner.push(Buffer.from(`data: ${'x'.repeat(20)}
data: ${'y'.repeat(20)}

data: ok

`));
    scanner.push(Buffer.from(`data: ${'z'.repeat(64)}`));
    expect(events).toEqual(['ok']);
    expect(skipped).toBe(2);
  });
});

function server(tools: string[] | null, prompts: string[] | null = null): McpServerConfig {
  return { name: 'files', transport: 'http', upstreams: [], command: null, maxSessions: 1, env: {}, cwd: null, timeoutMs: 1, headers: {}, tools: tools && new Set(tools), prompts: prompts && new Set(prompts) };
}

describe('visibility', () => {
  const key = (mcp: Record<string, string[]> | null) => ({ keyId: 'k', account: 'a', plan: 'p', mcp });

  it('is the key scope intersected with the allow-list; "*" in the scope is all of the server', () => {
    const visible = visibilityFor(server(['read', 'write']), key({ files: ['read', 'delete'] }));
    expect(['read', 'write', 'delete'].map((t) => visible.tool(t))).toEqual([true, false, false]);
    const all = visibilityFor(server(null), key({ files: ['*'] }));
    expect(all.tool('anything')).toBe(true);
    expect(visibilityFor(server(null), key({ git: ['*'] })).tool('read')).toBe(false);
    expect(visibilityFor(server(null), key(null)).tool('read')).toBe(false);
    expect(visibilityFor(server(null, ['p1']), key({ files: ['*'] })).prompt('p2')).toBe(false);
  });

  it('filters a list result and drops entries without a string name', () => {
    const listed: string[] = [];
    const result = filterListResult({ tools: [{ name: 'read' }, { name: 'write' }, 7, null, { name: 3 }], nextCursor: 'c' }, 'tools', (name) => name === 'read', (name) => listed.push(name));
    expect(result).toEqual({ tools: [{ name: 'read' }], nextCursor: 'c' });
    expect(listed).toEqual(['read', 'write']);
    expect(filterListResult('garbage', 'tools', () => true)).toBe('garbage');
  });
});

describe('MCP scope on keys', () => {
  it('is checked whole, naming the field at fault', () => {
    expect(checkMcpScope({ files: ['read_file'], git: ['*'] })).toEqual({ scope: { files: ['read_file'], git: ['*'] } });
    expect(checkMcpScope(null)).toEqual({ scope: null });
    expect(checkMcpScope(['files'])).toMatchObject({ param: 'mcp' });
    expect(checkMcpScope({ 'a__b': ['x'] })).toMatchObject({ param: 'mcp.a__b' });
    expect(checkMcpScope({ files: 'read' })).toMatchObject({ param: 'mcp.files' });
    expect(checkMcpScope({ files: ['ok', 'bad name'] })).toMatchObject({ param: 'mcp.files[1]' });
    expect(checkMcpScope({ files: ['x', 'x'] })).toMatchObject({ param: 'mcp.files[1]' });
    expect(checkMcpScope(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`s${i}`, ['*']])))).toMatchObject({ param: 'mcp' });
  });

  it('the CLI reads --mcp server=tool,tool', () => {
    expect(mcpScopeOf(['files=read_file,list_directory', 'git=*'])).toEqual({ files: ['read_file', 'list_directory'], git: ['*'] });
    expect(() => mcpScopeOf(['files'])).toThrow(/server=tool/);
    expect(() => mcpScopeOf(['a=x', 'a=y'])).toThrow(/twice/);
  });
});

describe('SseMessageScanner', () => {
  it('reads events split anywhere across chunks, and skips an event past its bound', () => {
    const events: string[] = [];
    const scanner = new SseMessageScanner((event) => events.push(`${event.id ?? '-'}:${event.data}`), 16);
    const text = 'id: 1\ndata: {"a":1}\n\n: comment\r\ndata: ' + 'x'.repeat(40) + '\n\nid: 3\ndata: b\ndata: c\n\n';
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i += 3) scanner.push(bytes.subarray(i, i + 3));
    expect(events).toEqual(['1:{"a":1}', '3:b\nc']);
  });

  it('keeps a priming event\'s retry through a filtered tools/list answer, and drops a retry that is not a number', () => {
    const answer = Buffer.from('id: s1:1\nretry: 500\ndata: \n\nid: s1:2\nretry: soon\nevent: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a"},{"name":"b"}]}}\n\n');
    const text = rewriteAnswer(answer, 'text/event-stream', 7, (result) => filterListResult(result, 'tools', (name) => name === 'a'));
    expect(text).toBe('id: s1:1\nretry: 500\ndata: \n\nid: s1:2\nevent: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a"}]}}\n\n');
  });
});
