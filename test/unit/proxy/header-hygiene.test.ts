import { describe, expect, it } from 'vitest';
import { upstreamRequestHeaders } from '../../../src/proxy/header-hygiene.js';

const identity = {
  requestId: 'req-1',
  agentId: 'support',
  forwardedFor: '10.0.0.1',
  forwardedProto: 'http',
  forwardedHost: 'gw.example',
  keyId: 'key_1',
  accountId: 'acct_1',
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
};

/** name → values, from flat pairs. */
function linesByName(pairs: string[]): Map<string, string[]> {
  const lines = new Map<string, string[]>();
  for (let i = 0; i < pairs.length; i += 2) lines.set(pairs[i]!, [...(lines.get(pairs[i]!) ?? []), pairs[i + 1]!]);
  return lines;
}

describe('upstreamRequestHeaders', () => {
  it('sends each identity header once, the gateway’s own, whatever the client sent under those names', () => {
    const pairs = upstreamRequestHeaders(
      {
        'content-type': 'application/json',
        authorization: 'Bearer ha_secret',
        traceparent: '00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01',
        'x-request-id': 'spoofed',
        'x-key-id': 'spoofed',
        'x-forwarded-for': '6.6.6.6',
        connection: 'keep-alive, x-hop',
        'x-hop': 'stays on its hop',
        tracestate: 'vendor=1',
      },
      identity,
    );
    expect(pairs.length % 2).toBe(0);
    const lines = linesByName(pairs);
    expect(lines.get('traceparent')).toEqual([identity.traceparent]);
    expect(lines.get('x-request-id')).toEqual(['req-1']);
    expect(lines.get('x-key-id')).toEqual(['key_1']);
    expect(lines.get('x-forwarded-for')).toEqual(['10.0.0.1']);
    expect(lines.get('x-forwarded-host')).toEqual(['gw.example']);
    expect(lines.get('tracestate')).toEqual(['vendor=1']);
    expect(lines.get('content-type')).toEqual(['application/json']);
    for (const gone of ['authorization', 'connection', 'x-hop']) expect(lines.has(gone)).toBe(false);
  });

  it('drops every client header whose name holds an underscore (CGI-style stacks read x_key_id as x-key-id)', () => {
    const lines = linesByName(
      upstreamRequestHeaders({ x_account_id: 'forged', x_key_id: 'forged', x_agent_id: 'forged', x_forwarded_for: '6.6.6.6', 'x-custom_flag': '1', 'x-custom-flag': '2' }, identity),
    );
    expect([...lines.keys()].filter((name) => name.includes('_'))).toEqual([]);
    expect(lines.get('x-custom-flag')).toEqual(['2']);
    expect(lines.get('x-account-id')).toEqual(['acct_1']);
  });

  it('sends a header node:http keeps as a list as one line per value', () => {
    const lines = linesByName(upstreamRequestHeaders({ 'set-cookie': ['a=1', 'b=2'] }, { ...identity, forwardedHost: undefined }));
    expect(lines.get('set-cookie')).toEqual(['a=1', 'b=2']);
    expect(lines.has('x-forwarded-host')).toBe(false);
  });
});
