// The create and edit forms of a key: account, name, plan and agents (from the running
// config's lists), tool scope, MCP scope (mcp-scope-field.tsx) and expiry. Create answers with
// the raw key, shown once (RawKey).
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Dialog } from '../components/dialog.js';
import { ChoiceField, DialogActions } from '../components/form-parts.js';
import { RawKey } from '../components/raw-key.js';
import { FormError } from '../components/states.js';
import type { Agent, Key, KeyWithSecret, McpServer, Plan } from '../types.js';
import { choicesOf, McpScopeField, sameScope, scopeOf } from './mcp-scope-field.js';

const DAY_MS = 86_400_000;
const EXPIRY_CHOICES = [
  { value: '', label: 'Never' },
  { value: '7d', label: 'In 7 days' },
  { value: '30d', label: 'In 30 days' },
  { value: '90d', label: 'In 90 days' },
  { value: '365d', label: 'In a year' },
];

function PlanField(props: { plans: Plan[]; value: string; onChange: (plan: string) => void }) {
  return (
    <label class="field">
      <span>Plan</span>
      <select name="plan" required value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {props.plans.map((plan) => (
          <option key={plan.name} value={plan.name}>
            {plan.name}
            {plan.windows.length > 0 ? ` — ${plan.windows.map((w) => `${w.requests}/${w.per}`).join(', ')}` : ' — no request limit'}
          </option>
        ))}
      </select>
    </label>
  );
}

function AgentsField(props: { agents: Agent[]; value: string[]; onChange: (agents: string[]) => void }) {
  const toggle = (id: string, on: boolean) => props.onChange(on ? [...props.value, id] : props.value.filter((a) => a !== id));
  const configured = props.agents.map((a) => a.id);
  // A key may still name an agent the config has since dropped: show it, so it can be unticked.
  const ids = [...configured, ...props.value.filter((id) => !configured.includes(id))];
  return (
    <fieldset class="field">
      <legend>Agents this key may call</legend>
      <div class="checks">
        {ids.map((id) => (
          <label key={id} class="check">
            <input type="checkbox" name="agents" value={id} checked={props.value.includes(id)} onChange={(e) => toggle(id, e.currentTarget.checked)} />
            {id}
            {configured.includes(id) ? null : <span class="muted"> (not configured)</span>}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

/** The scope as typed: names split on commas and spaces; none typed is null (no restriction). */
function parseTools(text: string): string[] | null {
  const names = text.split(/[\s,]+/).filter((name) => name !== '');
  return names.length === 0 ? null : names;
}

/** docs/policy.md, "Tool scope on keys": the tools the key's requests may name or be given. */
function ToolsField(props: { agents: Agent[]; chosen: string[]; value: string; onChange: (text: string) => void }) {
  // The chosen agents' allow-lists, as a hint of the names that mean something.
  const known = [...new Set(props.agents.filter((a) => props.chosen.includes(a.id)).flatMap((a) => a.tools ?? []))];
  return (
    <label class="field">
      <span>
        Tool scope <span class="muted">(optional; empty: any tool the agent allows)</span>
      </span>
      <input name="tools" value={props.value} onInput={(e) => props.onChange(e.currentTarget.value)} placeholder={known.length > 0 ? known.slice(0, 4).join(', ') : 'search, calculator'} />
      {known.length > 0 ? <span class="muted">Agent tools: {known.join(', ')}</span> : null}
    </label>
  );
}

export function CreateKeyDialog(props: { plans: Plan[]; agents: Agent[]; mcpServers: McpServer[]; onClose: () => void; onCreated: () => void }) {
  const [account, setAccount] = useState('');
  const [name, setName] = useState('');
  const [plan, setPlan] = useState(props.plans[0]?.name ?? '');
  const [agents, setAgents] = useState<string[]>(props.agents.length === 1 ? [props.agents[0]!.id] : []);
  const [expiresIn, setExpiresIn] = useState('');
  const [tools, setTools] = useState('');
  const [mcp, setMcp] = useState(() => choicesOf(null, props.mcpServers));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [created, setCreated] = useState<KeyWithSecret | undefined>(undefined);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    try {
      const scope = parseTools(tools);
      const mcpScope = scopeOf(mcp);
      const key = await api.post<KeyWithSecret>('/admin/v1/keys', {
        account: account.trim(),
        plan,
        agents,
        ...(name.trim() ? { name: name.trim() } : {}),
        ...(expiresIn ? { expires_in: expiresIn } : {}),
        ...(scope ? { tools: scope } : {}),
        ...(mcpScope ? { mcp: mcpScope } : {}),
      });
      setCreated(key);
      props.onCreated();
    } catch (failure) {
      setError(failure as Error);
    } finally {
      setBusy(false);
    }
  };

  if (created) {
    return (
      <Dialog title="Key created" onClose={props.onClose}>
        <RawKey rawKey={created.key} keyId={created.key_id} onDone={props.onClose} />
      </Dialog>
    );
  }
  return (
    <Dialog title="Create key" onClose={props.onClose}>
      <form class="form" onSubmit={submit}>
        <label class="field">
          <span>Account</span>
          <input name="account" required autoFocus value={account} onInput={(e) => setAccount(e.currentTarget.value)} placeholder="acme" />
        </label>
        <label class="field">
          <span>
            Name <span class="muted">(optional)</span>
          </span>
          <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="acme production" />
        </label>
        <PlanField plans={props.plans} value={plan} onChange={setPlan} />
        <AgentsField agents={props.agents} value={agents} onChange={setAgents} />
        <ToolsField agents={props.agents} chosen={agents} value={tools} onChange={setTools} />
        <McpScopeField servers={props.mcpServers} value={mcp} onChange={setMcp} />
        <ChoiceField label="Expires" name="expires" choices={EXPIRY_CHOICES} value={expiresIn} onChange={setExpiresIn} />
        <FormError error={error} />
        <DialogActions onCancel={props.onClose} busy={busy} disabled={account.trim() === '' || agents.length === 0} label="Create key" busyLabel="Creating…" />
      </form>
    </Dialog>
  );
}

/** "YYYY-MM-DD" of an ISO time, in the viewer's time zone, for a date input. */
function dateInputValue(iso: string | null): string {
  if (iso === null) return '';
  const d = new Date(iso);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

export function EditKeyDialog(props: { keyRecord: Key; plans: Plan[]; agents: Agent[]; mcpServers: McpServer[]; onClose: () => void; onSaved: () => Promise<void>; fallbackFocus: () => HTMLElement | null }) {
  const original = props.keyRecord;
  const [name, setName] = useState(original.name);
  const [plan, setPlan] = useState(original.plan);
  const [agents, setAgents] = useState<string[]>(original.agents);
  const [expiresOn, setExpiresOn] = useState(dateInputValue(original.expires_at));
  const [tools, setTools] = useState((original.tools ?? []).join(', '));
  const [mcp, setMcp] = useState(() => choicesOf(original.mcp ?? null, props.mcpServers));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    const changes: Record<string, unknown> = {};
    if (name.trim() !== original.name) changes.name = name.trim();
    if (plan !== original.plan) changes.plan = plan;
    if (agents.join(',') !== original.agents.join(',')) changes.agents = agents;
    // A list replaces the scope; emptied, the scope is removed (null). An empty scope (no tool at all) is set with the API or CLI.
    const scope = parseTools(tools);
    if (JSON.stringify(scope) !== JSON.stringify(original.tools ?? null) && !(scope === null && original.tools?.length === 0)) changes.tools = scope;
    // A scope replaces the key's whole; none left is null (no MCP server).
    const mcpScope = scopeOf(mcp);
    if (!sameScope(mcpScope, original.mcp ?? null)) changes.mcp = mcpScope;
    if (expiresOn !== dateInputValue(original.expires_at)) {
      // The end of the chosen day in the viewer's time zone.
      changes.expires_at = expiresOn === '' ? null : new Date(new Date(`${expiresOn}T00:00:00`).getTime() + DAY_MS - 1000).toISOString();
    }
    if (Object.keys(changes).length === 0) return props.onClose();
    setBusy(true);
    setError(undefined);
    try {
      await api.patch<Key>(`/admin/v1/keys/${encodeURIComponent(original.key_id)}`, changes);
      // Closed once the table shows the change (as for revoke): the key may have left a
      // filtered list, and its Edit button with it.
      await props.onSaved();
      props.onClose();
    } catch (failure) {
      setError(failure as Error);
      setBusy(false);
    }
  };

  return (
    <Dialog title={`Edit ${original.name || original.key_id}`} onClose={props.onClose} fallbackFocus={props.fallbackFocus}>
      <form class="form" onSubmit={submit}>
        <p class="muted">
          <code>{original.key_id}</code> · account <strong>{original.account}</strong>
        </p>
        <label class="field">
          <span>Name</span>
          <input name="name" value={name} autoFocus onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <PlanField plans={props.plans} value={plan} onChange={setPlan} />
        <AgentsField agents={props.agents} value={agents} onChange={setAgents} />
        <ToolsField agents={props.agents} chosen={agents} value={tools} onChange={setTools} />
        <McpScopeField servers={props.mcpServers} value={mcp} onChange={setMcp} />
        <label class="field">
          <span>
            Expires on <span class="muted">(empty: never)</span>
          </span>
          <input type="date" name="expires_on" value={expiresOn} onInput={(e) => setExpiresOn(e.currentTarget.value)} />
        </label>
        <FormError error={error} />
        <DialogActions onCancel={props.onClose} busy={busy} disabled={agents.length === 0} label="Save changes" busyLabel="Saving…" />
      </form>
    </Dialog>
  );
}
