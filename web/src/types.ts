// The admin API's answers as the dashboard reads them (openapi/admin.yaml).

export type KeyStatus = 'active' | 'expired' | 'revoked';
export type Role = 'admin' | 'viewer';

export interface Session {
  name: string;
  role: Role;
  csrf_token: string;
  expires_at: string;
}

export interface Key {
  key_id: string;
  account: string;
  plan: string;
  agents: string[];
  name: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  metadata: Record<string, string>;
  /** The key's tool scope; null: no restriction. */
  tools: string[] | null;
  /** The key's MCP scope: server → tools ("*": all); null: no MCP server (docs/mcp.md "Scopes"). */
  mcp: McpScope | null;
  replaces: string | null;
  replaced_by: string | null;
  status: KeyStatus;
}

export interface KeyPage {
  data: Key[];
  next_cursor: string | null;
}

/** A create or rotate answer: the raw key, shown once, with the key's fields. */
export type KeyWithSecret = Key & { key: string };

export interface Plan {
  name: string;
  windows: { name: string; requests: number; per: string }[];
}

/** Server name → the tools a key may use there; ["*"]: all of them. */
export type McpScope = Record<string, string[]>;

/** An MCP server as GET /admin/v1/mcp/servers lists it (docs/mcp.md "Dashboard"). */
export interface McpServer {
  name: string;
  transport: string;
  upstreams: { url: string; weight: number }[];
  /** This process's view of the upstreams; null where it serves no MCP front door. */
  targets: { url: string; weight: number; state: 'up' | 'ejected'; outstanding: number; ejected_until: string | null }[] | null;
  timeout: string;
  /** Names of the headers the gateway sends the server; their values are never shown. */
  header_names: string[];
  /** The allow-list; null: every tool the server lists. */
  tools: string[] | null;
  prompts: string[] | null;
  /** What the server listed in the last tools/list this instance relayed; null until one. */
  listed_tools: { names: string[]; truncated: boolean; listed_at: string } | null;
  /** This instance's, since it started; null where it serves no MCP front door. */
  counts: {
    requests: number;
    tool_calls: number;
    tool_call_errors: number;
    tool_calls_refused: number;
    sessions: number;
    by_tool: { tool: string; calls: number; refused: number }[];
  } | null;
}

export interface UpstreamTarget {
  url: string;
  weight?: number;
  state?: string;
}

export interface Agent {
  id: string;
  upstream: string;
  host: string | null;
  timeout: string;
  tools: string[] | null;
  max_tokens: number;
  max_connections: number | null;
  /** The configured runners. */
  upstreams?: UpstreamTarget[];
  /** The serving process's view of the runners, with their state; null on a --workers primary. */
  targets?: UpstreamTarget[] | null;
  state?: string;
  protocol?: 'agent-chat' | 'a2a';
  /** An A2A agent's card (docs/a2a.md); null until read. */
  a2a?: A2aCard | null;
}

export interface A2aCard {
  name: string;
  description: string;
  version: string;
  streaming: boolean;
  skills: { id: string; name: string; description: string; tags: string[] }[];
}

export interface UsageRow {
  group: string;
  period: string;
  requests: number;
  tokens: number;
  /** US dollars (the records' cost_usd, summed in micro-dollars); 0 without pricing. */
  cost_usd: number;
  /** Tool calls the answers made; absent from an older gateway's rows. */
  tool_calls?: number;
  errors: Record<string, number>;
  latency_ms: { p50: number | null; p99: number | null };
}

export type GroupBy = 'key' | 'account' | 'agent';
export type Granularity = 'hour' | 'day';

export interface UsageReport {
  group_by: GroupBy;
  granularity: Granularity;
  from: string;
  to: string;
  data: UsageRow[];
  next_cursor: string | null;
}

export interface ListAnswer<T> {
  data: T[];
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** A webhook event as GET /admin/v1/events lists it (docs/notifications.md "Admin API"). */
export interface WebhookEvent {
  id: string;
  type: string;
  subject: string;
  created_at: string;
  data: Record<string, unknown>;
  state: DeliveryState;
  attempts: Array<{ at: string; webhook?: string; status?: number; error?: string; duration_ms: number }>;
}

export interface EventPage {
  data: WebhookEvent[];
  next_cursor: string | null;
}
