// GET /admin/v1/plans and GET /admin/v1/agents: what keys may name, from the running config,
// and each agent's runners with their state (docs/upstreams.md).
import { redactedUrl } from '../config/redacted-url.js';
import { formatDurationMs } from '../config/duration.js';
import type { AdminExchange } from './admin-context.js';
import { sendJson } from './admin-context.js';

export function listPlans(x: AdminExchange): void {
  const data = [...x.deps.config().plans].map(([name, plan]) => ({
    name,
    windows: plan.requests.map((w) => ({ name: w.name, requests: w.limit, per: formatDurationMs(w.windowMs) })),
    tokens: plan.tokens.map((w) => ({ name: w.name, tokens: w.limit, per: formatDurationMs(w.windowMs) })),
  }));
  sendJson(x.res, 200, { data });
}

export function listAgents(x: AdminExchange): void {
  const state = x.deps.upstreams?.();
  const cards = x.deps.a2aCards?.();
  const data = [...x.deps.config().agents.values()].map((agent) => ({
    id: agent.id,
    upstream: redactedUrl(agent.upstream),
    upstreams: agent.upstreams.map((target) => ({ url: redactedUrl(target.url), weight: target.weight })),
    // null where this process holds no pools for the agent (a --workers primary).
    targets: state?.[agent.id]?.targets ?? null,
    host: agent.host ?? null,
    timeout: formatDurationMs(agent.headersTimeoutMs),
    tools: agent.tools ? [...agent.tools] : null,
    max_tokens: agent.maxTokens,
    max_connections: agent.maxConnections ?? null,
    protocol: agent.protocol,
    // An A2A agent's card as read (null until it is, or where this process reads none).
    a2a: agent.protocol === 'a2a' ? (cards?.[agent.id] ?? null) : null,
  }));
  sendJson(x.res, 200, { data });
}
