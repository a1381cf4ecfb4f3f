// The A2A protocol module (src/proxy/a2a/): the requests it encodes and the answers it
// decodes for A2A 1.0 and 0.3, the agent card's version and skills, the config key, and the
// event framing of a streaming send split anywhere.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../../src/config/load-config.js';
import { decodeAgentCard } from '../../../../src/proxy/a2a/a2a-card.js';
import { a2aChatInput } from '../../../../src/proxy/a2a/a2a-exchange.js';
import { decodeAnswer, encodeCancelRequest, encodeSendRequest } from '../../../../src/proxy/a2a/a2a-protocol.js';
import { A2aSseReader, MAX_EVENT_BYTES } from '../../../../src/proxy/a2a/a2a-sse-reader.js';
import { configProblems } from '../../../helpers/config-problems.js';

const input = { message: 'hi', contextId: 'c-1', taskId: undefined, metadata: { user_id: 'u' } };

describe('A2A requests', () => {
  it('encodes a 1.0 send and a 0.3 streaming send with the version method names and shapes', () => {
    const v1 = JSON.parse(encodeSendRequest('1.0', false, input, 'm-1', 'r-1').toString());
    expect(v1).toEqual({ jsonrpc: '2.0', id: 'r-1', method: 'SendMessage', params: { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hi' }], contextId: 'c-1', metadata: { user_id: 'u' } } } });
    const v03 = JSON.parse(encodeSendRequest('0.3', true, input, 'm-2', 'r-2').toString());
    expect(v03.method).toBe('message/stream');
    expect(v03.params.message).toMatchObject({ kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'hi' }] });
    expect(JSON.parse(encodeCancelRequest('0.3', 't-9', 'r').toString())).toMatchObject({ method: 'tasks/cancel', params: { id: 't-9' } });
    expect(JSON.parse(encodeCancelRequest('1.0', 't-9', 'r').toString()).method).toBe('CancelTask');
  });

  it('takes the message metadata and the task to continue from the chat request', () => {
    const mapped = a2aChatInput({ message: 'x', context: { session_id: 's', user_id: 'u', task_id: 't' }, tools: ['a'], temperature: 1, max_tokens: 5 });
    expect(mapped).toEqual({ message: 'x', contextId: 's', taskId: 't', metadata: { user_id: 'u', tools: ['a'], temperature: 1, max_tokens: 5 } });
    expect(() => a2aChatInput({ message: 'x', context: { task_id: 'x'.repeat(257) } })).toThrow(/context.task_id/);
  });
});

describe('A2A answers', () => {
  it('decodes a 1.0 task: artifacts joined, state, model and tokens', () => {
    const answer = decodeAnswer('1.0', JSON.stringify({ jsonrpc: '2.0', id: 'r-1', result: { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_INPUT_REQUIRED' }, artifacts: [{ parts: [{ text: 'a' }, { data: {} }, { text: 'b' }] }], metadata: { model: 'm', tokens_used: 3 } } } }), 'r-1');
    expect(answer).toEqual({ ok: true, update: { kind: 'task', taskId: 't', contextId: 'c', state: 'input-required', text: 'ab', model: 'm', tokensUsed: 3 } });
  });

  it("decodes a 0.3 status update's message text, and skips parts that are not text", () => {
    const answer = decodeAnswer('0.3', JSON.stringify({ jsonrpc: '2.0', id: 'r-1', result: { kind: 'status-update', taskId: 't', status: { state: 'failed', message: { parts: [{ kind: 'text', text: 'no' }, { kind: 'file', text: 'x' }] } } } }), 'r-1');
    expect(answer.ok && answer.update).toMatchObject({ kind: 'status', state: 'failed', text: 'no' });
  });

  it('tells a JSON-RPC error from garbage, and takes no unsafe token count', () => {
    expect(decodeAnswer('1.0', '{"jsonrpc":"2.0","id":"r-1","error":{"code":-32001,"message":"x"}}', 'r-1')).toEqual({ ok: false, problem: 'rpc_error', code: -32001 });
    for (const bad of ['nope', '[]', '{"jsonrpc":"1.0"}', '{"jsonrpc":"2.0","result":{"kind":"task"}}', '{"jsonrpc":"2.0","result":{"other":{}}}']) {
      expect(decodeAnswer('1.0', bad, 'r-1').ok).toBe(false);
    }
    for (const tokens of [1e300, -1, 1.5, '7', 2 ** 53, 10_000_001]) {
      const answer = decodeAnswer('1.0', JSON.stringify({ jsonrpc: '2.0', id: 'r-1', result: { message: { parts: [], metadata: { tokens_used: tokens } } } }), 'r-1');
      expect(answer.ok && answer.update.tokensUsed).toBeNull();
    }
  });

  it('takes a token count by the audit record\'s rule: up to 10,000,000 is shown, recorded and charged, more is unknown', () => {
    for (const [tokens, taken] of [[10_000_000, 10_000_000], [20_000_000, null]] as const) {
      const answer = decodeAnswer('1.0', JSON.stringify({ jsonrpc: '2.0', id: 'r-1', result: { message: { parts: [], metadata: { tokens_used: tokens } } } }), 'r-1');
      expect(answer.ok && answer.update.tokensUsed).toBe(taken);
    }
  });

  it("refuses an answer to another request's JSON-RPC id as malformed; an error may carry a null id", () => {
    const result = { message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] } };
    expect(decodeAnswer('1.0', JSON.stringify({ jsonrpc: '2.0', id: 'r-1', result }), 'r-1').ok).toBe(true);
    for (const id of ['r-2', 1, null, undefined]) {
      expect(decodeAnswer('1.0', JSON.stringify({ jsonrpc: '2.0', id, result }), 'r-1')).toEqual({ ok: false, problem: 'malformed', code: null });
    }
    expect(decodeAnswer('1.0', JSON.stringify({ jsonrpc: '2.0', id: 'r-2', error: { code: -1, message: 'x' } }), 'r-1')).toEqual({ ok: false, problem: 'malformed', code: null });
    expect(decodeAnswer('1.0', JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'x' } }), 'r-1')).toEqual({ ok: false, problem: 'rpc_error', code: -32700 });
  });
});

describe('A2A agent cards', () => {
  it('speaks 1.0 when the card declares a 1.0 JSON-RPC interface, else 0.3, and keeps the skills', () => {
    const v1 = decodeAgentCard(JSON.stringify({ supportedInterfaces: [{ protocolBinding: 'GRPC', protocolVersion: '1.0' }, { protocolBinding: 'JSONRPC', protocolVersion: '1.0' }], capabilities: { streaming: true }, skills: [{ id: 's', name: 'S', description: 'd', tags: ['t'] }] }));
    expect(v1).toMatchObject({ version: '1.0', streaming: true, skills: [{ id: 's', name: 'S', description: 'd', tags: ['t'] }] });
    expect(decodeAgentCard(JSON.stringify({ protocolVersion: '0.3.0', url: 'http://x' })).version).toBe('0.3');
    expect(decodeAgentCard(JSON.stringify({ supportedInterfaces: [{ protocolBinding: 'JSONRPC', protocolVersion: '0.3' }] }))).toMatchObject({ version: '0.3', streaming: false });
    expect(() => decodeAgentCard(JSON.stringify({ supportedInterfaces: [{ protocolBinding: 'GRPC', protocolVersion: '1.0' }] }))).toThrow(/no JSON-RPC interface/);
    expect(() => decodeAgentCard('[1]')).toThrow(/not a JSON object/);
  });
});

describe('agents.<id>.protocol', () => {
  it('defaults to agent-chat, takes a2a, and refuses anything else', () => {
    expect(parseConfigText('agents:\n  a:\n    upstream: http://127.0.0.1:1/api/v1\n', 't.yaml', {}).agents.get('a')!.protocol).toBe('agent-chat');
    expect(parseConfigText('agents:\n  a:\n    protocol: a2a\n    upstream: http://127.0.0.1:1/a2a\n', 't.yaml', {}).agents.get('a')!.protocol).toBe('a2a');
    expect(configProblems('agents:\n  a:\n    protocol: grpc\n    upstream: http://127.0.0.1:1/a2a\n').join('\n')).toContain('agents.a.protocol');
  });
});

describe('A2aSseReader', () => {
  it('frames events split anywhere, CRLF lines and a character split across chunks', () => {
    const text = 'data: {"a":"é"}\r\n\r\n: comment\nevent: x\ndata: 1\ndata: 2\n\n';
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const reader = new A2aSseReader();
      const events = [...reader.push(bytes.subarray(0, cut))!, ...reader.push(bytes.subarray(cut))!];
      expect(events).toEqual(['{"a":"é"}', '1\n2']);
    }
  });

  it('reads an event in time linear in its bytes: each byte is searched for a line end once (H3-07)', () => {
    // The work is counted, not timed: every indexOf on a string or a buffer is wrapped and the
    // characters it examined are summed. Rejoining the pending line to each chunk and searching
    // it again from its start examined each byte once per later chunk.
    const event = Buffer.from(`data: ${'x'.repeat(256 * 1024)}\n\n`);
    const pieces: Buffer[] = [];
    for (let at = 0; at < event.length; at += 256) pieces.push(event.subarray(at, at + 256));
    const reader = new A2aSseReader();
    let examined = 0;
    const count = (length: number, from: unknown, found: number): void => {
      const start = typeof from === 'number' && from > 0 ? from : 0;
      examined += (found === -1 ? length : found + 1) - start;
    };
    const stringIndexOf = String.prototype.indexOf;
    const bufferIndexOf = Buffer.prototype.indexOf;
    String.prototype.indexOf = function (this: string, search: string, from?: number): number {
      const found = stringIndexOf.call(this, search, from);
      count(this.length, from, found);
      return found;
    };
    Buffer.prototype.indexOf = function (this: Buffer, value: string | number | Uint8Array, from?: number, encoding?: BufferEncoding): number {
      const found = bufferIndexOf.call(this, value, from, encoding);
      count(this.length, from, found);
      return found;
    };
    const events: string[] = [];
    try {
      for (const piece of pieces) events.push(...reader.push(piece)!);
    } finally {
      String.prototype.indexOf = stringIndexOf;
      Buffer.prototype.indexOf = bufferIndexOf;
    }
    expect(events).toEqual([`x`.repeat(256 * 1024)]);
    // Linear: at most each byte once, plus one step per piece.
    expect(examined).toBeLessThanOrEqual(event.length + pieces.length);
  });

  it('refuses an event that grows past the bound', () => {
    const reader = new A2aSseReader();
    expect(reader.push(Buffer.alloc(MAX_EVENT_BYTES + 1, 0x61))).toBeNull();
  });
});
