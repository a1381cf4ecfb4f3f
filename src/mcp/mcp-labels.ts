// Bounded metric labels for the front door (docs/mcp.md "Metrics"): MCP's own methods, and
// per server the tool names it listed (at most MAX_TOOL_LABELS), else "other".
const METHODS: ReadonlySet<string> = new Set([
  'initialize', 'ping', 'tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'resources/list', 'resources/read',
  'resources/templates/list', 'resources/subscribe', 'resources/unsubscribe', 'completion/complete', 'logging/setLevel',
  'notifications/initialized', 'notifications/cancelled', 'notifications/progress', 'notifications/roots/list_changed',
  'tasks/get', 'tasks/list', 'tasks/cancel', 'tasks/result',
]);

export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : 'other';
}

const MAX_TOOL_LABELS = 256;

export class ToolLabels {
  private readonly listed = new Map<string, Set<string>>();

  /** A name the server listed: it becomes a label value while there is room. */
  note(server: string, tool: string): void {
    let names = this.listed.get(server);
    if (names === undefined) this.listed.set(server, (names = new Set()));
    if (names.size < MAX_TOOL_LABELS) names.add(tool);
  }

  label(server: string, tool: string): string {
    return this.listed.get(server)?.has(tool) === true ? tool : 'other';
  }
}
