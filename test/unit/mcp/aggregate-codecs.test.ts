// The aggregated endpoint's small codecs (docs/mcp.md "The aggregated endpoint"): the
// `{server}__{name}` split, the server-to-client request ids, the session record, the event
// rewrite. Each decoder refuses what it did not encode.
import { describe, expect, it } from 'vitest';
import { qualifiedName, splitQualifiedName } from '../../../src/mcp/aggregate-names.js';
import { decodeUpstreamRequestId, encodeUpstreamRequestId } from '../../../src/mcp/aggregate-request-ids.js';
import { decodeAggregateRecord, encodeAggregateRecord } from '../../../src/mcp/aggregate-session-record.js';
import { aggregateEventText } from '../../../src/mcp/aggregate-events.js';
import { decodeSessionRecord, encodeSessionRecord } from '../../../src/mcp/mcp-session-record.js';

describe('{server}__{name}', () => {
  it('splits at the first __; empty sides are no name', () => {
    expect(splitQualifiedName('files__read')).toEqual({ server: 'files', name: 'read' });
    expect(splitQualifiedName('a__b__c')).toEqual({ server: 'a', name: 'b__c' });
    expect(splitQualifiedName('a___b')).toEqual({ server: 'a', name: '_b' });
    for (const bad of ['__x', 'x__', '__', '', 'plain', '_x_']) expect(splitQualifiedName(bad), bad).toBeUndefined();
    expect(qualifiedName('git', 'log')).toBe('git__log');
  });
});

describe('server-to-client request ids', () => {
  it('round-trip numbers and strings with their type', () => {
    for (const id of [0, 7, -3, 1.5, 1e21, 'abc', '', 'a:b:c', 'mcpgw:files:n:1']) {
      const encoded = encodeUpstreamRequestId('files', id);
      expect(typeof encoded).toBe('string');
      expect(decodeUpstreamRequestId(encoded)).toEqual({ server: 'files', id });
    }
  });

  it('refuse ids the gateway did not issue', () => {
    for (const id of [0, null, 'x', 'mcpgw:', 'mcpgw:files', 'mcpgw:files:', 'mcpgw:files:n:', 'mcpgw:files:n:abc', 'mcpgw:files:n:01', 'mcpgw:files:x:1', 'mcpgw:Files:n:1', 'mcpgw:a__b:n:1', 'mcpgw::n:1']) {
      expect(decodeUpstreamRequestId(id), String(id)).toBeUndefined();
    }
  });
});

describe('aggregated session record', () => {
  const record = { keyId: 'key_1', protocol: '2025-06-18', client: '{"capabilities":{},"clientInfo":{}}', upstreams: { files: { target: 'http://a/mcp', upstreamSession: 'u-1' }, git: { target: 'http://b/mcp', upstreamSession: null } } };

  it('round-trips, and is never read as a per-server session (nor the other way round)', () => {
    const text = encodeAggregateRecord(record);
    expect(decodeAggregateRecord(text)).toEqual(record);
    expect(decodeSessionRecord(text)).toBeUndefined();
    expect(decodeAggregateRecord(encodeSessionRecord({ server: 'files', keyId: 'key_1', target: 'http://a/mcp', upstreamSession: null, protocol: '2025-06-18' }))).toBeUndefined();
  });

  it('reads garbage as no session', () => {
    for (const text of ['', 'null', '[]', '{"v":1,"kind":"aggregate"}', '{"v":2,"kind":"aggregate","key_id":"k","protocol":"p","client":"{}","upstreams":{}}', '{"v":1,"kind":"aggregate","key_id":"k","protocol":"p","client":"{}","upstreams":{"files":["x"]}}', '{"v":1,"kind":"aggregate","key_id":"k","protocol":"p","client":"{}","upstreams":{"files":[1,null]}}']) {
      expect(decodeAggregateRecord(text), text).toBeUndefined();
    }
  });
});

describe('events relayed through /mcp', () => {
  it('a server request gets the gateway id; responses and notifications pass; priming events and event ids are dropped', () => {
    const request = aggregateEventText('git', { id: '5', event: 'message', retry: undefined, data: '{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}' });
    expect(request).toBe('event: message\ndata: {"jsonrpc":"2.0","id":"mcpgw:git:n:0","method":"sampling/createMessage","params":{}}\n\n');
    const response = '{"jsonrpc":"2.0","id":0,"result":{}}';
    expect(aggregateEventText('git', { id: undefined, event: undefined, retry: undefined, data: response })).toBe(`data: ${response}\n\n`);
    const notification = '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}';
    expect(aggregateEventText('git', { id: undefined, event: undefined, retry: undefined, data: notification })).toBe(`data: ${notification}\n\n`);
    expect(aggregateEventText('git', { id: 'prime', event: undefined, retry: undefined, data: '' })).toBe('');
    expect(aggregateEventText('git', { id: undefined, event: undefined, retry: undefined, data: 'not json\nat all' })).toBe('data: not json\ndata: at all\n\n');
  });
});
