// A key's tool scope applied to a chat request (docs/design.md, "Agent-aware policy";
// docs/policy.md, "Tool scope on keys"; docs/decisions/0064-tool-scope-on-keys.md). Pure
// functions: which tools the runner is given, and the body that says so. Only requests on a
// key with a scope (or, later, with exhausted tools) come here; the pipeline's common path
// pays for one property check.
import { EVERY_TOOL } from '../config/limit-window.js';
import { GatewayError } from '../errors.js';
import type { RequestState } from '../request/request-state.js';

/** What the runner is given: `forward` null leaves the body as the client sent it. */
export interface ToolsForwarded {
  /** The `tools` list to forward in place of an absent one; null: the body is unchanged. */
  readonly forward: readonly string[] | null;
  /** Tools of the known list (the scope within the allow-list) left out because they are exhausted. */
  readonly withheld: string[];
}

function unchanged(): ToolsForwarded {
  return { forward: null, withheld: [] };
}

/** Names in refusal messages are cut here: a client's list is echoed, never at any length. */
const MAX_NAME_IN_MESSAGE = 64;

function outsideScope(tool: string, why: string): GatewayError {
  return new GatewayError('invalid_request', { param: 'tools', message: `"${tool.slice(0, MAX_NAME_IN_MESSAGE)}" ${why}.` });
}

/**
 * Which tools go to the runner.
 *
 * - `requested` (the request's own `tools`, validated unique strings): each must lie within
 *   `scope` (when there is one) and `allowList` (when the agent has one), else 400
 *   `invalid_request`, `param: "tools"`, naming the first tool outside; the body is unchanged.
 *   A requested tool that is exhausted is not decided here: refusing it is the tool-call
 *   quota's answer (429 `tool_budget_exceeded`).
 * - No `requested`, a `scope`: the scope within the allow-list, in the scope's order, less the
 *   `exhausted` tools, which are reported as `withheld`.
 * - No `requested`, no `scope`: the body is unchanged, unless some of the agent's allow-listed
 *   tools are exhausted; then the allow-list less those (the only list known).
 */
export function toolsToForward(
  requested: readonly string[] | null,
  scope: readonly string[] | null,
  allowList: ReadonlySet<string> | undefined,
  exhausted: ReadonlySet<string> | undefined,
): ToolsForwarded {
  if (requested !== null) {
    if (scope !== null) {
      for (const tool of requested) {
        if (!scope.includes(tool)) throw outsideScope(tool, "is outside this key's tool scope");
      }
    }
    if (allowList !== undefined) {
      for (const tool of requested) {
        if (!allowList.has(tool)) throw outsideScope(tool, 'is not a tool of this agent');
      }
    }
    return unchanged();
  }
  const known: Iterable<string> | undefined = scope ?? allowList;
  if (known === undefined) return unchanged();
  const hasExhausted = exhausted !== undefined && exhausted.size > 0;
  // A spent "*" quota (every tool call counts against it) withholds every tool.
  const allExhausted = hasExhausted && exhausted.has(EVERY_TOOL);
  // Without a scope, only withheld tools make the allow-list worth sending.
  if (scope === null && !hasExhausted) return unchanged();
  const forward: string[] = [];
  const withheld: string[] = [];
  for (const tool of known) {
    if (scope !== null && allowList !== undefined && !allowList.has(tool)) continue;
    if (hasExhausted && (allExhausted || exhausted.has(tool))) withheld.push(tool);
    else forward.push(tool);
  }
  if (scope === null && withheld.length === 0) return unchanged();
  return { forward, withheld };
}

const OPEN_BRACE = 0x7b;

/**
 * The body with `"tools":[...],` spliced in right after its opening `{`: the request had no
 * `tools` member (in any spelling: the parsed object would hold it), so no key repeats, and
 * the rest of the client's bytes go as they came (decision 0064: no re-serialising). The
 * object has at least one member (`message` is required), so the comma is always followed by
 * one. The runner's Content-Length is the new buffer's (the client's is never forwarded).
 */
export function spliceTools(body: Buffer, tools: readonly string[]): Buffer {
  // Before the `{` only whitespace or a byte order mark can come: the body parsed as an object.
  const brace = body.indexOf(OPEN_BRACE);
  if (brace < 0) throw new Error('spliceTools: the body is not a JSON object');
  const member = Buffer.from(`"tools":${JSON.stringify(tools)},`, 'utf8');
  return Buffer.concat([body.subarray(0, brace + 1), member, body.subarray(brace + 1)], body.length + member.length);
}

/**
 * A request on a key with a tool scope (or with exhausted tools): refuses tools outside,
 * records on `state.toolsGiven` the list the runner is given, and returns the body to send.
 * `state.toolsGiven` holds the request's own `tools` on the way in (set from the validated
 * summary).
 * `parsed.tools` is set too when a list is forwarded: an A2A agent's call is made from it.
 */
export function applyToolScope(
  state: RequestState,
  parsed: Record<string, unknown>,
  body: Buffer,
  scope: readonly string[] | null,
  allowList: ReadonlySet<string> | undefined,
  exhausted: ReadonlySet<string> | undefined,
): { body: Buffer; withheld: string[] } {
  const decided = toolsToForward(state.toolsGiven, scope, allowList, exhausted);
  const forward = decided.forward;
  if (forward === null) return { body, withheld: decided.withheld };
  state.toolsGiven = forward;
  parsed.tools = forward;
  return { body: spliceTools(body, forward), withheld: decided.withheld };
}
