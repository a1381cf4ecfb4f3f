// The A2A adapter of a gateway process (docs/a2a.md): the agents' cards and the call a chat
// request becomes. GatewayRuntime loads it with a dynamic import the first time a config
// names an A2A agent (at start, or on a reload); a gateway whose agents all speak the native
// protocol never loads the A2A modules (docs/performance.md, "A feature that is off loads nothing").
import type { AgentConfig } from '../../config/schema.js';
import type { Logger } from '../../logger.js';
import type { ChatRoute } from '../../request/chat-route.js';
import type { A2aExchange } from '../forward-request.js';
import type { A2aCard } from './a2a-card.js';
import type { CardFetcher } from './a2a-cards.js';
import type { A2aVersion } from './a2a-protocol.js';

export interface A2aAdapter {
  /** The A2A agents' cards (a2a-cards.ts): read at start and on every reload. */
  readonly cards: {
    get(agentId: string): A2aCard | undefined;
    snapshot(): Record<string, A2aCard>;
    refresh(agents: ReadonlyMap<string, AgentConfig>): Promise<void>;
    stop(): void;
  };
  /** A chat request's body and headers as the A2A call (a2a-exchange.ts). */
  call(body: Record<string, unknown>, card: A2aCard, route: ChatRoute, headers: string[]): { exchange: A2aExchange; body: Buffer; headers: string[] };
  /** The JSON-RPC method of the send, for the attempt's span. */
  sendMethod(version: A2aVersion, streaming: boolean): string;
}

/** Does any agent of this config speak A2A? */
export function namesA2aAgent(agents: ReadonlyMap<string, AgentConfig>): boolean {
  for (const agent of agents.values()) if (agent.protocol === 'a2a') return true;
  return false;
}

export async function loadA2aAdapter(logger: Logger | undefined, fetchCard?: CardFetcher): Promise<A2aAdapter> {
  const [{ A2aCards }, { a2aCall }, { sendMethod }] = await Promise.all([import('./a2a-cards.js'), import('./a2a-exchange.js'), import('./a2a-protocol.js')]);
  return { cards: new A2aCards(logger, fetchCard), call: a2aCall, sendMethod };
}
