// Real A2A servers built with the official SDK (@a2a-js/sdk), in process on a free port, for
// the A2A adapter's tests (docs/a2a.md). Each kind of agent is one AgentExecutor: a streaming
// agent (status update, artifact chunks, completed), a non-streaming agent (one Message), one
// that fails its task, one that asks for input, and one that never finishes (to test cancel).
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { Role, TaskState, type AgentCard, type Message, type Part } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

export type A2aAgentKind = 'streaming' | 'plain' | 'failing' | 'input' | 'endless';

export interface A2aServerOptions {
  kind: A2aAgentKind;
  /** The protocol version the card declares for its JSON-RPC interface. */
  version?: '1.0' | '0.3';
  /** Put on the answer's metadata (`model`, `tokens_used`). */
  metadata?: Record<string, unknown>;
  /** The port to listen on (a restart on the same one); a free one otherwise. */
  port?: number;
  /** The card's skills (default: one, `Echo`). */
  skills?: { id: string; name: string; description: string; tags: string[] }[];
}

export interface TestA2aServer {
  /** The JSON-RPC endpoint (the gateway's `upstream`). */
  url: string;
  /** Every user message the agent received, in order. */
  received: Message[];
  /** Task ids the agent was asked to cancel. */
  canceled: string[];
  /** The `traceparent` header of each JSON-RPC call, in order (undefined when none came). */
  traceparents: (string | undefined)[];
  close(): Promise<void>;
}

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(contextId: string, taskId: string, value: string, metadata?: Record<string, unknown>): Message {
  return { messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [text(value)], metadata, extensions: [], referenceTaskIds: [] };
}

function status(bus: ExecutionEventBus, ctx: RequestContext, state: TaskState, message?: Message, metadata?: Record<string, unknown>): void {
  bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata }));
}

class TestExecutor implements AgentExecutor {
  private readonly stopped = new Set<string>();

  constructor(
    private readonly options: A2aServerOptions,
    private readonly server: TestA2aServer,
  ) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    this.server.received.push(ctx.userMessage);
    const { kind, metadata } = this.options;
    const said = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    if (kind === 'plain') {
      bus.publish(AgentEvent.message(agentMessage(ctx.contextId, '', `echo: ${said}`, metadata)));
      bus.finished();
      return;
    }
    bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    status(bus, ctx, TaskState.TASK_STATE_WORKING);
    if (kind === 'failing') {
      status(bus, ctx, TaskState.TASK_STATE_FAILED, agentMessage(ctx.contextId, ctx.taskId, 'the tool broke'));
    } else if (kind === 'input') {
      status(bus, ctx, TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(ctx.contextId, ctx.taskId, 'Which city?'));
    } else if (kind === 'endless') {
      status(bus, ctx, TaskState.TASK_STATE_WORKING, agentMessage(ctx.contextId, ctx.taskId, 'thinking'));
      while (!this.stopped.has(ctx.taskId)) await new Promise((resolve) => setTimeout(resolve, 20));
      status(bus, ctx, TaskState.TASK_STATE_CANCELED);
    } else {
      const artifactId = randomUUID();
      const words = ['Hello', ', ', said];
      for (const [index, word] of words.entries()) {
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            artifact: { artifactId, name: 'answer', description: '', parts: [text(word)], metadata: undefined, extensions: [] },
            append: index > 0,
            lastChunk: index === words.length - 1,
            metadata: undefined,
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      status(bus, ctx, TaskState.TASK_STATE_COMPLETED, undefined, metadata);
    }
    bus.finished();
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.server.canceled.push(taskId);
    this.stopped.add(taskId);
    void bus;
  };
}

function card(url: string, options: A2aServerOptions): AgentCard {
  return {
    name: `test ${options.kind} agent`,
    description: 'An A2A agent for the gateway tests.',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: options.version ?? '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: options.kind !== 'plain', pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: (options.skills ?? [{ id: 'echo', name: 'Echo', description: 'Says back what it was told.', tags: ['test'] }]).map((skill) => ({
      ...skill,
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
}

export async function startA2aServer(options: A2aServerOptions): Promise<TestA2aServer> {
  const app = express();
  const listening: Server = await new Promise((resolve) => {
    const s = app.listen(options.port ?? 0, '127.0.0.1', () => resolve(s));
  });
  const address = listening.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const url = `http://127.0.0.1:${port}/a2a/jsonrpc`;
  const server: TestA2aServer = {
    url,
    received: [],
    canceled: [],
    traceparents: [],
    close: () => new Promise<void>((resolve) => {
      listening.closeAllConnections();
      listening.close(() => resolve());
    }),
  };
  const handler = new DefaultRequestHandler(card(url, options), new InMemoryTaskStore(), new TestExecutor(options, server));
  const legacyCompat = { enabled: options.version === '0.3' };
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler, legacyCompat }));
  app.use('/a2a/jsonrpc', (req, _res, next) => {
    const traceparent = req.headers.traceparent;
    server.traceparents.push(typeof traceparent === 'string' ? traceparent : undefined);
    next();
  });
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  return server;
}
