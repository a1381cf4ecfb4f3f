// The key form's MCP scope (docs/mcp.md "Scopes", docs/dashboard.md): per configured MCP server,
// no access, all tools ("*"), or chosen tools — ticked from the names the server is known by
// (its allow-list, the tools it last listed, what the key already holds) or typed. Sent to the
// admin API as `mcp: { server: [tool, …] }`; no server chosen is no MCP scope (null).
import type { McpScope, McpServer } from '../types.js';

export type McpAccess = 'none' | 'all' | 'some';

export interface McpServerChoice {
  access: McpAccess;
  /** Ticked names (access "some"). */
  tools: string[];
  /** Names typed, separated by commas or spaces (access "some"). */
  typed: string;
}

export type McpScopeChoices = Record<string, McpServerChoice>;

const ACCESS_LABELS: { value: McpAccess; label: string }[] = [
  { value: 'none', label: 'No access' },
  { value: 'all', label: 'All tools' },
  { value: 'some', label: 'Chosen tools' },
];

/** The names worth offering as ticks: the allow-list when there is one, else what the server last listed. */
function knownTools(server: McpServer | undefined): string[] {
  if (server === undefined) return [];
  return server.tools ?? server.listed_tools?.names ?? [];
}

/** The form's choices for a key's scope (null: a new key, or one without MCP access). */
export function choicesOf(scope: McpScope | null, servers: McpServer[]): McpScopeChoices {
  const choices: McpScopeChoices = {};
  for (const server of servers) choices[server.name] = { access: 'none', tools: [], typed: '' };
  for (const [name, tools] of Object.entries(scope ?? {})) {
    if (tools.includes('*')) {
      choices[name] = { access: 'all', tools: [], typed: '' };
      continue;
    }
    const known = knownTools(servers.find((s) => s.name === name));
    choices[name] = { access: 'some', tools: tools.filter((t) => known.includes(t)), typed: tools.filter((t) => !known.includes(t)).join(', ') };
  }
  return choices;
}

/** The scope to send: servers with access, in the order shown; none at all is null. */
export function scopeOf(choices: McpScopeChoices): McpScope | null {
  const scope: McpScope = {};
  for (const [name, choice] of Object.entries(choices)) {
    if (choice.access === 'all') scope[name] = ['*'];
    if (choice.access === 'some') {
      const typed = choice.typed.split(/[\s,]+/).filter((t) => t !== '');
      scope[name] = [...new Set([...choice.tools, ...typed])];
    }
  }
  return Object.keys(scope).length === 0 ? null : scope;
}

/** Whether two scopes say the same (the order of servers and of names does not matter). */
export function sameScope(a: McpScope | null, b: McpScope | null): boolean {
  const canonical = (scope: McpScope | null) => JSON.stringify(Object.entries(scope ?? {}).map(([server, tools]) => [server, [...tools].sort()]).sort(([x], [y]) => String(x).localeCompare(String(y))));
  return canonical(a) === canonical(b);
}

function ServerScope(props: { name: string; server: McpServer | undefined; choice: McpServerChoice; onChange: (choice: McpServerChoice) => void }) {
  const { name, server, choice } = props;
  const known = [...new Set([...knownTools(server), ...choice.tools])];
  const toggle = (tool: string, on: boolean) => props.onChange({ ...choice, tools: on ? [...choice.tools, tool] : choice.tools.filter((t) => t !== tool) });
  return (
    <fieldset class="mcp-server-scope" data-mcp-scope={name}>
      <legend>
        {name}
        {server === undefined ? <span class="muted"> (not configured)</span> : null}
      </legend>
      <div class="checks" role="radiogroup" aria-label={`Access to ${name}`}>
        {ACCESS_LABELS.map((access) => (
          <label key={access.value} class="check">
            <input type="radio" name={`mcp-${name}`} value={access.value} checked={choice.access === access.value} onChange={() => props.onChange({ ...choice, access: access.value })} />
            {access.label}
          </label>
        ))}
      </div>
      {choice.access === 'some' ? (
        <div class="mcp-tools">
          {known.length > 0 ? (
            <div class="checks" role="group" aria-label={`Tools of ${name}`}>
              {known.map((tool) => (
                <label key={tool} class="check">
                  <input type="checkbox" name={`mcp-${name}-tools`} value={tool} checked={choice.tools.includes(tool)} onChange={(e) => toggle(tool, e.currentTarget.checked)} />
                  {tool}
                </label>
              ))}
            </div>
          ) : (
            <p class="muted">No tools known yet: the server has not been listed through this gateway. Type their names.</p>
          )}
          <label class="field field-inline">
            <span>{known.length > 0 ? 'Other tools' : 'Tools'}</span>
            <input name={`mcp-${name}-typed`} value={choice.typed} onInput={(e) => props.onChange({ ...choice, typed: e.currentTarget.value })} placeholder="read_file, search" />
          </label>
        </div>
      ) : null}
    </fieldset>
  );
}

/** One block per configured server, and per server the key names that the config no longer has (so it can be taken away). */
export function McpScopeField(props: { servers: McpServer[]; value: McpScopeChoices; onChange: (value: McpScopeChoices) => void }) {
  const names = Object.keys(props.value);
  if (names.length === 0) return null;
  return (
    <fieldset class="field">
      <legend>MCP servers this key may use</legend>
      {names.map((name) => (
        <ServerScope key={name} name={name} server={props.servers.find((s) => s.name === name)} choice={props.value[name]!} onChange={(choice) => props.onChange({ ...props.value, [name]: choice })} />
      ))}
    </fieldset>
  );
}
