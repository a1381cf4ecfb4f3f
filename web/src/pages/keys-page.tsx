// Settings → API Keys: the keys of the store with filters (account, agent, status), a search
// box (a name prefix, or one exact key_id) and cursor paging; create, edit, rotate and revoke for the admin role. A viewer sees the same
// table without any write control (and the API would refuse the write anyway).
import { useState } from 'preact/hooks';
import { api, ApiError, query } from '../api.js';
import { Empty, ErrorState, Loading } from '../components/states.js';
import { formatDate, relativeTime } from '../format.js';
import { useAsync, useCatalog, useDebounced } from '../hooks.js';
import { AgentFilter } from '../components/form-parts.js';
import type { Key, KeyPage, KeyStatus, McpScope } from '../types.js';
import { RevokeDialog, RotateDialog } from './key-actions.js';
import { CreateKeyDialog, EditKeyDialog } from './key-form.js';

const PAGE_SIZE = 25;
/** What a key id looks like (docs/keys.md): searched as one exact key, not as a name prefix. */
const KEY_ID = /^key_[0-9A-Za-z]{16}$/;

/** One exact key as a page: the key, or none when there is no such key. */
async function exactKey(keyId: string): Promise<KeyPage> {
  try {
    return { data: [await api.get<Key>(`/admin/v1/keys/${keyId}`)], next_cursor: null };
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return { data: [], next_cursor: null };
    throw error;
  }
}

type Open = { kind: 'create' } | { kind: 'edit' | 'rotate' | 'revoke'; key: Key } | undefined;

/** A key's MCP scope under its agents: "mcp: files (read_file, search), git (all tools)". */
function McpScopeSummary(props: { scope: McpScope }) {
  const servers = Object.entries(props.scope);
  return (
    <div class="muted key-mcp" data-testid="key-mcp">
      mcp:{' '}
      {servers.length === 0
        ? 'none'
        : servers.map(([server, tools]) => `${server} (${tools.includes('*') ? 'all tools' : tools.length === 0 ? 'no tools' : tools.join(', ')})`).join(', ')}
    </div>
  );
}

function StatusBadge(props: { status: KeyStatus }) {
  return <span class={`badge badge-${props.status}`}>{props.status}</span>;
}

export function KeysPage(props: { canWrite: boolean }) {
  const catalog = useCatalog();
  const [accountText, setAccountText] = useState('');
  const account = useDebounced(accountText.trim(), 300);
  const [agent, setAgent] = useState('');
  const [status, setStatus] = useState<'' | KeyStatus>('');
  const [searchText, setSearchText] = useState('');
  const search = useDebounced(searchText.trim(), 300);
  const byKeyId = KEY_ID.test(search);
  // Cursors of the pages before this one (the first page has none), for these filters only:
  // new filters start again at the first page.
  const filterKey = JSON.stringify([account, agent, status, search]);
  const [paging, setPaging] = useState<{ filterKey: string; cursors: string[] }>({ filterKey, cursors: [] });
  const cursors = paging.filterKey === filterKey ? paging.cursors : [];
  const setCursors = (next: string[]) => setPaging({ filterKey, cursors: next });
  const cursor = cursors.at(-1);
  const [open, setOpen] = useState<Open>(undefined);

  const keys = useAsync(
    () => (byKeyId ? exactKey(search) : api.get<KeyPage>(`/admin/v1/keys${query({ account, agent, status, name_prefix: search || undefined, limit: PAGE_SIZE, cursor })}`)),
    [account, agent, status, search, cursor],
  );
  const nowMs = Date.now();
  const filtered = account !== '' || agent !== '' || status !== '' || search !== '';
  const close = () => setOpen(undefined);
  // Where focus goes when a key's dialog closes and the button that opened it is gone (the
  // APG dialog pattern: to an element that continues the work logically). A revoked key's
  // row keeps no buttons: focus goes to the row, whose text now says "revoked", and Tab goes
  // on from there. A key that left the list (a filter no longer matches it): the heading.
  const fallbackFocus = (keyId: string) => () =>
    document.querySelector<HTMLElement>(`tr[data-key-id="${CSS.escape(keyId)}"]`) ?? document.getElementById('keys-title');

  return (
    <section aria-labelledby="keys-title">
      <div class="page-header">
        <div>
          <p class="breadcrumb">Settings</p>
          <h1 id="keys-title" tabIndex={-1}>
            API Keys
          </h1>
          <p class="muted">Keys callers send as <code>Authorization: Bearer ha_…</code>. Each is scoped to an account, a plan and its agents.</p>
        </div>
        {props.canWrite ? (
          <button type="button" class="button button-primary" disabled={!catalog.data} onClick={() => setOpen({ kind: 'create' })}>
            Create key
          </button>
        ) : (
          <p class="note">Read only: you are signed in with a viewer token.</p>
        )}
      </div>

      <form class="filters" role="search" aria-label="Filter keys" onSubmit={(e) => e.preventDefault()}>
        <label class="field field-inline">
          <span>Search</span>
          <input type="search" name="search" value={searchText} onInput={(e) => setSearchText(e.currentTarget.value)} placeholder="name or key_…" title="A name's first letters, or a whole key_… id" maxLength={200} />
        </label>
        <label class="field field-inline">
          <span>Account</span>
          <input type="search" name="account" value={accountText} onInput={(e) => setAccountText(e.currentTarget.value)} placeholder="any" />
        </label>
        <AgentFilter agents={catalog.data?.agents} value={agent} onChange={setAgent} />
        <label class="field field-inline">
          <span>Status</span>
          <select name="status" value={status} onChange={(e) => setStatus(e.currentTarget.value as '' | KeyStatus)}>
            <option value="">any</option>
            <option value="active">active</option>
            <option value="expired">expired</option>
            <option value="revoked">revoked</option>
          </select>
        </label>
      </form>

      {keys.error ? (
        <ErrorState error={keys.error} retry={keys.reload} />
      ) : keys.data === undefined ? (
        <Loading what="keys" />
      ) : keys.data.data.length === 0 ? (
        keys.data.next_cursor ? (
          // A rare match: the gateway looked at its per-page share of keys and found none yet.
          <Empty title="No matches on this page yet.">
            <p>The search goes on from here: use “Next”.</p>
          </Empty>
        ) : filtered ? (
          <Empty title="No keys match these filters." />
        ) : (
          <Empty title="No keys yet.">{props.canWrite ? <p>Create the first one with “Create key”; its raw value is shown once.</p> : null}</Empty>
        )
      ) : (
        <div class="table-wrap" role="region" aria-label="API keys" tabIndex={0} aria-busy={keys.loading}>
          <table class="table" data-testid="keys-table">
            <thead>
              <tr>
                <th scope="col">Name · Key ID</th>
                <th scope="col">Account</th>
                <th scope="col">Plan</th>
                <th scope="col">Agents</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">Status</th>
                {props.canWrite ? (
                  <th scope="col" class="sticky-end">
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((key) => (
                <tr key={key.key_id} data-key-id={key.key_id} tabIndex={-1}>
                  <td>
                    <div>{key.name || <span class="muted">unnamed</span>}</div>
                    <code class="key-id">{key.key_id}</code>
                    <div>
                      <a class="key-usage-link" href={`#/usage?key_id=${encodeURIComponent(key.key_id)}`}>
                        Usage and agent runs
                      </a>
                    </div>
                  </td>
                  <td>{key.account}</td>
                  <td>{key.plan}</td>
                  <td>
                    {key.agents.join(', ')}
                    {key.tools === null ? null : <div class="muted key-tools">tools: {key.tools.length === 0 ? 'none' : key.tools.join(', ')}</div>}
                    {key.mcp === null || key.mcp === undefined ? null : <McpScopeSummary scope={key.mcp} />}
                  </td>
                  <td class="nowrap" title={key.created_at}>{formatDate(key.created_at, nowMs)}</td>
                  <td class="nowrap" title={key.expires_at ?? 'never'}>{key.expires_at === null ? <span class="muted">never</span> : relativeTime(key.expires_at, nowMs)}</td>
                  <td class="nowrap" title={key.last_used_at ?? 'never'}>{key.last_used_at === null ? <span class="muted">never</span> : relativeTime(key.last_used_at, nowMs)}</td>
                  <td>
                    <StatusBadge status={key.status} />
                  </td>
                  {props.canWrite ? (
                    <td class="sticky-end">
                      {key.status === 'revoked' ? null : (
                        <div class="actions">
                          <button type="button" class="button button-small" aria-label={`Edit ${key.key_id}`} onClick={() => setOpen({ kind: 'edit', key })}>
                            Edit
                          </button>
                          <button type="button" class="button button-small" aria-label={`Rotate ${key.key_id}`} onClick={() => setOpen({ kind: 'rotate', key })}>
                            Rotate
                          </button>
                          <button type="button" class="button button-small button-danger-quiet" aria-label={`Revoke ${key.key_id}`} onClick={() => setOpen({ kind: 'revoke', key })}>
                            Revoke
                          </button>
                        </div>
                      )}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <nav class="pager" aria-label="Pages of keys">
        <button type="button" class="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous
        </button>
        <span class="muted">Page {cursors.length + 1}</span>
        <button type="button" class="button" disabled={!keys.data?.next_cursor} onClick={() => keys.data?.next_cursor && setCursors([...cursors, keys.data.next_cursor])}>
          Next
        </button>
      </nav>

      {open?.kind === 'create' && catalog.data ? <CreateKeyDialog plans={catalog.data.plans} agents={catalog.data.agents} mcpServers={catalog.data.mcpServers} onClose={close} onCreated={keys.reload} /> : null}
      {open?.kind === 'edit' && catalog.data ? (
        <EditKeyDialog keyRecord={open.key} plans={catalog.data.plans} agents={catalog.data.agents} mcpServers={catalog.data.mcpServers} onClose={close} onSaved={keys.reload} fallbackFocus={fallbackFocus(open.key.key_id)} />
      ) : null}
      {open?.kind === 'rotate' ? <RotateDialog keyRecord={open.key} onClose={close} onDone={keys.reload} fallbackFocus={fallbackFocus(open.key.key_id)} /> : null}
      {open?.kind === 'revoke' ? <RevokeDialog keyRecord={open.key} onClose={close} onDone={keys.reload} fallbackFocus={fallbackFocus(open.key.key_id)} /> : null}
    </section>
  );
}
