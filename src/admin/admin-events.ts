// The events API (docs/admin-api.md "Events"): the webhook events any instance published, with
// their delivery state and last attempts, and redelivery. Reads are open to both roles;
// redeliver writes (the router asks for `admin`). With notifications off the list is empty and
// every event is unknown.
import { z } from 'zod';
import { EVENT_TYPES } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import type { StoredEvent } from '../notifications/outbox.js';
import { EVENT_ID_PATTERN } from '../notifications/event-id.js';
import type { AdminExchange } from './admin-context.js';
import { sendJson } from './admin-context.js';
import { emptyBody } from './admin-key-requests.js';
import { queryObject, readJsonBody, validate } from './admin-request-body.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

const listEventsQuery = z.strictObject({
  type: z.enum(EVENT_TYPES).optional(),
  subject: z.string().min(1).max(256).optional(),
  state: z.enum(['pending', 'delivered', 'failed']).optional(),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, 'a whole number')
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_LIMIT, { message: `from 1 to ${MAX_LIMIT}` })
    .optional(),
  cursor: z.string().regex(EVENT_ID_PATTERN, 'the next_cursor of a previous page').optional(),
});

/** An event as the API shows it: the webhook body's fields plus subject, state and attempts. */
export function toEventView(event: StoredEvent): Record<string, unknown> {
  return { id: event.id, type: event.type, subject: event.subject, created_at: event.created_at, data: event.data, state: event.state, attempts: event.attempts };
}

export async function listEvents(x: AdminExchange): Promise<void> {
  const query = validate(listEventsQuery, queryObject(x.url.searchParams));
  const events = x.deps.events;
  if (!events) return sendJson(x.res, 200, { data: [], next_cursor: null });
  const page = await events.list({ type: query.type, subject: query.subject, state: query.state }, query.cursor, query.limit ?? DEFAULT_LIMIT);
  sendJson(x.res, 200, { data: page.data.map(toEventView), next_cursor: page.nextCursor });
}

export async function redeliverEvent(x: AdminExchange, eventId: string): Promise<void> {
  validate(emptyBody, await readJsonBody(x.req, true));
  const event = await x.deps.events?.redeliver(eventId);
  if (!event) throw new GatewayError('not_found', { message: x.deps.events ? 'No such event (events are kept 7 days).' : 'No such event: notifications are off (no notifications.webhooks configured).' });
  x.deps.logger.info({ event_id: event.id, type: event.type, actor: x.actor.name, request_id: x.requestId }, 'webhook event queued for redelivery');
  sendJson(x.res, 202, toEventView(event));
}
