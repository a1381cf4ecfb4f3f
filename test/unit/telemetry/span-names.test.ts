// Every name the gateway's spans carry, judged by @opentelemetry/semantic-conventions' own
// registry (its exported ATTR_* and EVENT_* constants, stable and incubating): a name the
// package does not know, or deprecates in favour of another, fails unless it is the
// gateway's own (`agentgw.`). The spans as exported are judged the same way in
// test/integration/telemetry-traces.test.ts and gateway-a2a-traces.test.ts.
import { describe, expect, it } from 'vitest';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { ATTR, EVENT, PROVIDER_DEFAULT, SPAN_NAME } from '../../../src/telemetry/span-attributes.js';
import { conventionProblems, loadSemconvRegistry } from '../../helpers/semconv-registry.js';

const registry = loadSemconvRegistry();

describe('span names against the semantic conventions registry', () => {
  it('knows every attribute name the spans set, and none is deprecated', () => {
    expect(conventionProblems(registry, { attributes: Object.values(ATTR) })).toEqual([]);
  });

  it('knows every span event name, or it is the gateway\'s own', () => {
    expect(conventionProblems(registry, { events: Object.values(EVENT) })).toEqual([]);
  });

  it('names the operation by a registered gen_ai.operation.name value', () => {
    expect(SPAN_NAME).toBe(incubating.GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT);
  });

  it('sets the GenAI attributes the conventions require or recommend for invoke_agent', () => {
    const names = new Set<string>(Object.values(ATTR));
    for (const required of [incubating.ATTR_GEN_AI_OPERATION_NAME, incubating.ATTR_GEN_AI_PROVIDER_NAME, incubating.ATTR_GEN_AI_REQUEST_MODEL, incubating.ATTR_RPC_SYSTEM_NAME]) expect(names).toContain(required);
    expect(names).not.toContain(incubating.ATTR_RPC_SYSTEM);
    // The default provider is the gateway's own name, not a well-known provider's.
    const wellKnown = Object.entries(incubating).filter(([constant]) => constant.startsWith('GEN_AI_PROVIDER_NAME_VALUE_')).map(([, value]) => value);
    expect(wellKnown).not.toContain(PROVIDER_DEFAULT);
  });

  it('fails the names it should: unknown, deprecated, an unregistered gen_ai. event', () => {
    expect(conventionProblems(registry, { attributes: ['rpc.system', 'gen_ai.system', 'gen_ai.first_token', 'agentgw.anything'], events: ['gen_ai.first_token', 'gen_ai.tool_call', 'agentgw.first_token'] })).toEqual([
      `attribute rpc.system is deprecated in the semantic conventions ${registry.version}: Replaced by \`rpc.system.name\`.`,
      expect.stringContaining(`attribute gen_ai.system is deprecated in the semantic conventions ${registry.version}: Replaced by \`gen_ai.provider.name\``),
      `attribute gen_ai.first_token is not in the semantic conventions ${registry.version} and not agentgw.-prefixed`,
      `event gen_ai.first_token is not in the semantic conventions ${registry.version} and not agentgw.-prefixed`,
      `event gen_ai.tool_call is not in the semantic conventions ${registry.version} and not agentgw.-prefixed`,
    ]);
  });
});
