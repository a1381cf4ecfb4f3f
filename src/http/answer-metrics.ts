// The answer's facts as metrics (docs/metrics.md; decision 0066): each tool call the runner
// made, and what the answer cost. Counted once per request, when its response closes.
//
// The `tool` label is bounded: an agent with an allow-list (`tools`) names its own tools
// and any other is `other`; an agent without one names the first MAX_TOOL_LABELS distinct
// tools its runners call in this process, then `other`, so a runner inventing names cannot
// grow the series without bound.
import type { AgentConfig } from '../config/schema.js';
import { metrics } from '../metrics/metrics.js';
import type { RequestState } from '../request/request-state.js';

/** Distinct `tool` label values per agent without an allow-list. */
export const MAX_TOOL_LABELS = 64;
export const OTHER_TOOL = 'other';

/** An agent's tool names seen so far (agents without an allow-list only). */
const seenTools = new Map<string, Set<string>>();

export function countAnswerFacts(state: RequestState, agent: AgentConfig | undefined): void {
  if (agent === undefined) return;
  const cost = state.costUsd;
  if (cost !== null && cost > 0) metrics.costUsd.inc({ agent: agent.id }, cost);
  const calls = state.toolCalls;
  if (calls === null) return;
  const given = state.toolsGiven;
  for (const tool of calls) {
    const verdict = given === null || given.includes(tool) ? 'allowed' : 'outside_scope';
    metrics.toolCalls.inc({ agent: agent.id, tool: toolLabel(agent, tool), verdict });
  }
}

/** The `tool` label a call of `tool` is counted under. */
export function toolLabel(agent: AgentConfig, tool: string): string {
  if (agent.tools !== undefined) return agent.tools.has(tool) ? tool : OTHER_TOOL;
  let seen = seenTools.get(agent.id);
  if (seen === undefined) {
    seen = new Set();
    seenTools.set(agent.id, seen);
  }
  if (seen.has(tool)) return tool;
  if (seen.size >= MAX_TOOL_LABELS || tool === OTHER_TOOL) return OTHER_TOOL;
  seen.add(tool);
  return tool;
}
