// What the conformance suite's 2025-11-25-only server scenarios ask of the test server
// (test/helpers/mcp-conformance-server.ts), kept apart from the older scenarios' tools:
// json-schema-2020-12 (a tool whose inputSchema carries $schema, $defs, additionalProperties
// as written), elicitation-sep1034-defaults and elicitation-sep1330-enums (elicitation schemas
// with defaults and every enum form), server-sse-polling (a tool that closes its SSE stream
// mid-call, its answer replayed on the client's GET with Last-Event-ID), and the event store
// that makes streams resumable. The suite's scenario texts (the @modelcontextprotocol/
// conformance package) say what each expects; the SDK does the protocol.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ElicitResultSchema, ListToolsRequestSchema, type JSONRPCMessage, type ListToolsResult, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** The suite's scenarios that only the 2025-11-25 revision has. */
export const CONFORMANCE_SCENARIOS_2025_11_25 = [
  'json-schema-2020-12', 'elicitation-sep1034-defaults', 'elicitation-sep1330-enums', 'server-sse-polling', 'server-sse-multiple-streams',
  'dns-rebinding-protection',
] as const;

/** How long a client waits before it reconnects to a closed stream (the priming event's `retry:`). */
export const SSE_RETRY_MS = 500;

const JSON_SCHEMA_2020_12_TOOL = 'json_schema_2020_12_tool';
// Written out as JSON Schema 2020-12: the SDK's zod conversion would not keep $schema or $defs.
const JSON_SCHEMA_2020_12_INPUT = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
  additionalProperties: false,
} as const;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Every event of every stream of one session, in order, so a client that reconnects with
 * Last-Event-ID is sent what it missed. Event ids are `{stream}:{n}`.
 */
export class SessionEventStore implements EventStore {
  private readonly events: { id: string; streamId: string; message: JSONRPCMessage }[] = [];
  private sequence = 0;

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}:${++this.sequence}`;
    this.events.push({ id, streamId, message });
    return id;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.find((event) => event.id === eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const at = this.events.findIndex((event) => event.id === lastEventId);
    if (at === -1) return '';
    const { streamId } = this.events[at]!;
    // A priming event is stored as `{}`: nothing to send again.
    for (const event of this.events.slice(at + 1)) if (event.streamId === streamId && 'jsonrpc' in event.message) await send(event.id, event.message);
    return streamId;
  }
}

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export function tools20251125(server: McpServer): void {
  const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
  // Sent on the call's own stream (related to it), as the spec says a server's requests during a call should be.
  const elicit = async (extra: ToolExtra, message: string, properties: Record<string, unknown>) => {
    // The schemas are the suite's, some outside the SDK's narrower request type (legacy enumNames): sent as written.
    const request = { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required: [] } } } as unknown as ServerRequest;
    const result = await extra.sendRequest(request, ElicitResultSchema);
    return text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
  };
  server.registerTool(JSON_SCHEMA_2020_12_TOOL, { description: 'Tool with JSON Schema 2020-12 features', inputSchema: { name: z.string().optional() } }, async (args) => text(`Called with ${JSON.stringify(args)}`));
  server.registerTool('test_elicitation_sep1034_defaults', { description: 'Elicitation with defaults (SEP-1034)', inputSchema: {} }, (_args, extra) =>
    elicit(extra, 'Please review the fields, with their defaults', {
      name: { type: 'string', description: 'User name', default: 'John Doe' },
      age: { type: 'integer', description: 'User age', default: 30 },
      score: { type: 'number', description: 'User score', default: 95.5 },
      status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
      verified: { type: 'boolean', description: 'Verification status', default: true },
    }),
  );
  server.registerTool('test_elicitation_sep1330_enums', { description: 'Elicitation with every enum form (SEP-1330)', inputSchema: {} }, (_args, extra) =>
    elicit(extra, 'Please choose', {
      untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
      titledSingle: { type: 'string', oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }] },
      legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
      untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
      titledMulti: { type: 'array', items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }] } },
    }),
  );
  // SEP-1699 polling: one event on the stream (so the client holds an event id), the stream
  // closed, the answer sent later: stored, and replayed on the client's GET with Last-Event-ID.
  server.registerTool('test_reconnection', { description: 'Closes its SSE stream mid-call; the answer comes on reconnection', inputSchema: {} }, async (_args, extra) => {
    await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'Closing the stream; reconnect for the answer' } });
    extra.closeSSEStream?.();
    await pause(100);
    return text('Reconnection test completed successfully');
  });
  // The SDK lists registered tools with their zod schemas converted; this one is listed as written.
  const registered = server.server as unknown as { _requestHandlers: Map<string, (request: unknown, extra: unknown) => Promise<ListToolsResult>> };
  const listTools = registered._requestHandlers.get('tools/list')!;
  server.server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
    const result = await listTools(request, extra);
    return { ...result, tools: result.tools.map((tool) => (tool.name === JSON_SCHEMA_2020_12_TOOL ? { ...tool, inputSchema: JSON_SCHEMA_2020_12_INPUT } : tool)) };
  });
}
