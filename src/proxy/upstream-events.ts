// upstream.down and upstream.up (docs/notifications-events.md, "Upstream events"): a
// target leaving rotation (outlier ejection, failed health checks) or coming back. Each
// gateway sees its own ejections, so several may notice one runner's outage: the dedupe key
// (agent, target, transition, time bucket) makes it one event per bucket across instances
// (docs/decisions/0069-webhook-event-producers.md).
import type { Clock } from '../clock.js';
import { redactedUrl } from '../config/redacted-url.js';
import type { Notifier } from '../notifications/notifier.js';
import type { TargetTransition } from './agent-upstreams.js';

/** Transitions of one target the same way within this long are one event across instances. */
export const UPSTREAM_DEDUPE_BUCKET_MS = 60_000;

export function upstreamEventListener(publisher: Pick<Notifier, 'publish'>, clock: Clock, bucketMs = UPSTREAM_DEDUPE_BUCKET_MS): (transition: TargetTransition) => void {
  return ({ agentId, target, state, reason }) => {
    const nowMs = clock.now();
    const url = redactedUrl(target.url);
    const data: Record<string, unknown> = { agent: agentId, target: target.origin, url, reason, at: new Date(nowMs).toISOString() };
    if (state === 'down' && target.ejected) data.ejected_until = new Date(target.ejectedUntilMs).toISOString();
    const bucket = Math.floor(nowMs / bucketMs);
    publisher.publish(`upstream.${state}`, `agent:${agentId}`, data, { dedupeKey: `upstream:${agentId}:${url}:${state}:${bucket}`, dedupeTtlMs: 2 * bucketMs });
  };
}
