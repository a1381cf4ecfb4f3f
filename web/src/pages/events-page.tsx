// Events: the webhook events the gateway published, newest first, with their delivery state
// and last attempt, filtered by state and type; an admin may queue one for delivery again
// (docs/notifications.md "Admin API"). Viewers see the list without the button.
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { Empty, ErrorState, Loading } from '../components/states.js';
import { formatDateTime } from '../format.js';
import { useAsync } from '../hooks.js';
import type { DeliveryState, EventPage, WebhookEvent } from '../types.js';

const EVENT_TYPES = ['budget.threshold', 'key.created', 'key.updated', 'key.rotated', 'key.revoked', 'key.expiring', 'key.expired', 'upstream.down', 'upstream.up'];
const STATE_TONE: Record<DeliveryState, string> = { delivered: 'active', pending: 'expired', failed: 'revoked' };

function lastAttempt(event: WebhookEvent): string {
  const last = event.attempts[event.attempts.length - 1];
  if (!last) return '—';
  return `${last.status !== undefined ? String(last.status) : (last.error ?? 'error')} · ${last.duration_ms} ms`;
}

export function EventsPage(props: { canWrite: boolean }) {
  const [state, setState] = useState<'' | DeliveryState>('');
  const [type, setType] = useState('');
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  const events = useAsync(() => api.get<EventPage>(`/admin/v1/events${query({ state, type, limit: 100 })}`), [state, type]);

  const redeliver = async (event: WebhookEvent) => {
    setNotice(undefined);
    setFailure(undefined);
    try {
      await api.post<WebhookEvent>(`/admin/v1/events/${encodeURIComponent(event.id)}/redeliver`);
      setNotice(`${event.id} queued for delivery again.`);
      await events.reload();
    } catch (error) {
      setFailure(error as Error);
    }
  };

  return (
    <section aria-labelledby="events-title">
      <div class="page-header">
        <div>
          <h1 id="events-title">Events</h1>
          <p class="muted">Webhook events of the last 7 days, newest first, and whether their receivers got them.</p>
        </div>
        <button type="button" class="button" onClick={events.reload}>
          Refresh
        </button>
      </div>
      {props.canWrite ? null : <p class="note">Read only: you are signed in with a viewer token.</p>}

      <form class="filters" role="search" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
        <label class="field field-inline">
          <span>State</span>
          <select name="state" value={state} onChange={(e) => setState(e.currentTarget.value as '' | DeliveryState)}>
            <option value="">any</option>
            <option value="pending">pending</option>
            <option value="delivered">delivered</option>
            <option value="failed">failed</option>
          </select>
        </label>
        <label class="field field-inline">
          <span>Type</span>
          <select name="type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="">any</option>
            {EVENT_TYPES.map((t) => (
              <option value={t} key={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
      </form>

      {notice ? (
        <p class="note" role="status">
          {notice}
        </p>
      ) : null}
      {failure ? <ErrorState error={failure} /> : null}
      {events.error ? (
        <ErrorState error={events.error} retry={events.reload} />
      ) : events.data === undefined ? (
        <Loading what="events" />
      ) : events.data.data.length === 0 ? (
        <Empty title="No events">
          <p class="muted">Events appear here once a webhook is configured (notifications.webhooks) and something happens.</p>
        </Empty>
      ) : (
        <div class="table-wrap" role="region" aria-label="Events" tabIndex={0}>
          <table class="table" data-testid="events-table">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Type</th>
                <th scope="col">Subject</th>
                <th scope="col">State</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last attempt</th>
                <th scope="col">Created</th>
                {props.canWrite ? (
                  <th scope="col" class="sticky-end">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {events.data.data.map((event) => (
                <tr key={event.id} data-event-id={event.id}>
                  <td>
                    <code class="breakable">{event.id}</code>
                  </td>
                  <td class="nowrap">{event.type}</td>
                  <td>
                    <code class="breakable">{event.subject}</code>
                  </td>
                  <td>
                    <span class={`badge badge-${STATE_TONE[event.state]}`}>{event.state}</span>
                  </td>
                  <td>{event.attempts.length}</td>
                  <td class="nowrap">{lastAttempt(event)}</td>
                  <td class="nowrap" title={event.created_at}>
                    {formatDateTime(event.created_at, Date.now())}
                  </td>
                  {props.canWrite ? (
                    <td class="sticky-end">
                      <button type="button" class="button button-quiet" onClick={() => void redeliver(event)} aria-label={`Redeliver ${event.id}`}>
                        Redeliver
                      </button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
