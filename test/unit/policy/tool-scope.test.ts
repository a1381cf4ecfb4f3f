import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { GatewayError } from '../../../src/errors.js';
import { applyToolScope, spliceTools, toolsToForward } from '../../../src/policy/tool-scope.js';
import { RequestState } from '../../../src/request/request-state.js';

const allow = new Set(['search', 'calculator', 'web_search', 'files']);

function refusal(run: () => unknown): { type: string; param: string | undefined; message: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof GatewayError) return { type: error.type, param: error.param, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('toolsToForward: a request naming tools', () => {
  it('leaves the body unchanged when every tool lies within the scope and the allow-list', () => {
    expect(toolsToForward(['search'], ['calculator', 'search'], allow, undefined)).toEqual({ forward: null, withheld: [] });
    expect(toolsToForward([], ['search'], allow, undefined)).toEqual({ forward: null, withheld: [] });
    expect(toolsToForward(['search', 'files'], null, allow, undefined)).toEqual({ forward: null, withheld: [] });
    expect(toolsToForward(['anything'], null, undefined, undefined)).toEqual({ forward: null, withheld: [] });
  });

  it('refuses a tool outside the scope with 400 invalid_request, param tools, naming it', () => {
    const r = refusal(() => toolsToForward(['search', 'web_search'], ['search', 'calculator'], allow, undefined));
    expect(r).toMatchObject({ type: 'invalid_request', param: 'tools' });
    expect(r.message).toContain('"web_search"');
    expect(r.message).toContain('scope');
  });

  it('refuses a tool outside the agent allow-list even when the scope lists it', () => {
    const r = refusal(() => toolsToForward(['shell'], ['shell', 'search'], allow, undefined));
    expect(r).toMatchObject({ type: 'invalid_request', param: 'tools' });
    expect(r.message).toContain('"shell"');
  });

  it('cuts a long tool name to 64 characters in the message', () => {
    const long = 'x'.repeat(10_000);
    const r = refusal(() => toolsToForward([long], ['search'], allow, undefined));
    expect(r.message).toContain(`"${'x'.repeat(64)}"`);
    expect(r.message).not.toContain('x'.repeat(65));
    expect(r.message.length).toBeLessThan(200);
  });

  it('leaves exhausted requested tools to the quota (not refused here, nothing withheld)', () => {
    expect(toolsToForward(['search'], ['search'], allow, new Set(['search']))).toEqual({ forward: null, withheld: [] });
  });
});

describe('toolsToForward: a request naming no tools', () => {
  it('forwards the scope within the allow-list, in the scope order', () => {
    expect(toolsToForward(null, ['web_search', 'shell', 'search'], allow, undefined)).toEqual({ forward: ['web_search', 'search'], withheld: [] });
    expect(toolsToForward(null, ['files', 'calculator'], allow, undefined)).toEqual({ forward: ['files', 'calculator'], withheld: [] });
  });

  it('forwards the whole scope when the agent has no allow-list', () => {
    expect(toolsToForward(null, ['shell', 'search'], undefined, undefined)).toEqual({ forward: ['shell', 'search'], withheld: [] });
  });

  it('forwards an empty list when nothing of the scope is on the allow-list: the agent uses no tool', () => {
    expect(toolsToForward(null, ['shell'], allow, undefined)).toEqual({ forward: [], withheld: [] });
  });

  it('leaves the body unchanged without a scope and without exhausted tools', () => {
    expect(toolsToForward(null, null, allow, undefined)).toEqual({ forward: null, withheld: [] });
    expect(toolsToForward(null, null, allow, new Set())).toEqual({ forward: null, withheld: [] });
    expect(toolsToForward(null, null, undefined, new Set(['search']))).toEqual({ forward: null, withheld: [] });
  });

  it('withholds exhausted tools from the scope within the allow-list', () => {
    expect(toolsToForward(null, ['web_search', 'shell', 'search', 'files'], allow, new Set(['search', 'shell']))).toEqual({ forward: ['web_search', 'files'], withheld: ['search'] });
    expect(toolsToForward(null, ['search'], allow, new Set(['search']))).toEqual({ forward: [], withheld: ['search'] });
    expect(toolsToForward(null, ['search', 'files'], allow, new Set(['calculator']))).toEqual({ forward: ['search', 'files'], withheld: [] });
  });

  it('without a scope, withholds exhausted tools from the allow-list (the only list known)', () => {
    expect(toolsToForward(null, null, allow, new Set(['web_search', 'other']))).toEqual({ forward: ['search', 'calculator', 'files'], withheld: ['web_search'] });
    expect(toolsToForward(null, null, allow, new Set(['other']))).toEqual({ forward: null, withheld: [] });
  });

  it('against a brute-force model: forward and withheld split scope∩allow, in order, and no tool outside is ever given', () => {
    const name = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f');
    const list = fc.uniqueArray(name, { maxLength: 6 });
    fc.assert(
      fc.property(fc.option(list, { nil: null }), fc.option(list, { nil: undefined }), fc.option(list, { nil: undefined }), (scope, allowed, spent) => {
        const allowSet = allowed === undefined ? undefined : new Set(allowed);
        const spentSet = spent === undefined ? undefined : new Set(spent);
        const got = toolsToForward(null, scope, allowSet, spentSet);
        const known = scope !== null ? scope.filter((t) => allowSet === undefined || allowSet.has(t)) : allowSet === undefined ? null : [...allowSet];
        const expectedWithheld = known === null ? [] : known.filter((t) => spentSet?.has(t) === true);
        const expectedForward = known === null || (scope === null && expectedWithheld.length === 0) ? null : known.filter((t) => spentSet?.has(t) !== true);
        expect(got).toEqual({ forward: expectedForward, withheld: expectedWithheld });
      }),
    );
  });
});

describe('spliceTools', () => {
  it('puts the tools member right after the opening brace and keeps every other byte', () => {
    const body = Buffer.from('  {"message":"hi","context":{"user_id":"u"}}');
    const out = spliceTools(body, ['search', 'files']);
    expect(out.toString()).toBe('  {"tools":["search","files"],"message":"hi","context":{"user_id":"u"}}');
    expect(JSON.parse(out.toString())).toEqual({ tools: ['search', 'files'], message: 'hi', context: { user_id: 'u' } });
    expect(out.length).toBe(Buffer.byteLength(out.toString()));
  });

  it('splices an empty list, and after a byte order mark', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"message":"é"}')]);
    const out = spliceTools(body, []);
    expect(out.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    expect(out.subarray(3).toString()).toBe('{"tools":[],"message":"é"}');
  });

  it('keeps any JSON object body valid and equal to the object with tools added', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string().filter((k) => k !== 'tools' && k !== '__proto__'), fc.jsonValue()), fc.constantFrom('', ' ', '\n\t'), fc.uniqueArray(fc.stringMatching(/^[A-Za-z0-9_.:-]{1,8}$/)), (object, pad, tools) => {
        const withMessage = { message: 'm', ...object };
        const body = Buffer.from(pad + JSON.stringify(withMessage, null, pad.length > 0 ? 1 : undefined));
        const out = spliceTools(body, tools);
        expect(JSON.parse(out.toString())).toEqual({ ...(JSON.parse(body.toString()) as object), tools });
      }),
    );
  });
});

describe('applyToolScope', () => {
  function state(requested: readonly string[] | null): RequestState {
    const s = new RequestState(undefined, '127.0.0.1', 0, 0);
    s.toolsGiven = requested;
    return s;
  }

  it('forwards the scope: a new body, parsed.tools for an A2A call, and toolsGiven says what the runner got', () => {
    const s = state(null);
    const parsed: Record<string, unknown> = { message: 'hi' };
    const body = Buffer.from('{"message":"hi"}');
    const out = applyToolScope(s, parsed, body, ['files', 'search'], allow, undefined);
    expect(out.body.toString()).toBe('{"tools":["files","search"],"message":"hi"}');
    expect(out.withheld).toEqual([]);
    expect(parsed.tools).toEqual(['files', 'search']);
    expect(s.toolsGiven).toEqual(['files', 'search']);
  });

  it('leaves a request naming tools within the scope as sent', () => {
    const s = state(['search']);
    const parsed: Record<string, unknown> = { message: 'hi', tools: ['search'] };
    const body = Buffer.from('{"message":"hi","tools":["search"]}');
    const out = applyToolScope(s, parsed, body, ['search'], allow, undefined);
    expect(out.body).toBe(body);
    expect(s.toolsGiven).toEqual(['search']);
  });

  it('refuses a request naming a tool outside the scope, changing nothing', () => {
    const s = state(['web_search']);
    const parsed: Record<string, unknown> = { message: 'hi', tools: ['web_search'] };
    const r = refusal(() => applyToolScope(s, parsed, Buffer.from('{}'), ['search'], allow, undefined));
    expect(r).toMatchObject({ type: 'invalid_request', param: 'tools' });
    expect(parsed.tools).toEqual(['web_search']);
    expect(s.toolsGiven).toEqual(['web_search']);
  });

  it('reports the withheld tools', () => {
    const s = state(null);
    const out = applyToolScope(s, { message: 'hi' }, Buffer.from('{"message":"hi"}'), ['search', 'files'], allow, new Set(['files']));
    expect(out.withheld).toEqual(['files']);
    expect(s.toolsGiven).toEqual(['search']);
  });
});
