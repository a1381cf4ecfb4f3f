// The cards of the configured A2A agents, fetched at start and on every reload (docs/a2a.md).
// An agent whose card cannot be fetched or read is unavailable (503 agent_unavailable) with
// one warning naming why, and its card is tried again every RETRY_MS until it is read or the
// next reload: a card server that is down at start must not need a reload to recover.
import type { AgentConfig } from '../../config/schema.js';
import type { Logger } from '../../logger.js';
import { fetchAgentCard, type A2aCard } from './a2a-card.js';

export const CARD_RETRY_MS = 30_000;

export type CardFetcher = (endpoint: string) => Promise<A2aCard>;

export class A2aCards {
  private cards = new Map<string, A2aCard>();
  /** Bumped by each refresh: a fetch of an older one lands nowhere. */
  private generation = 0;
  private readonly retries = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    private readonly logger: Logger | undefined,
    private readonly fetchCard: CardFetcher = (endpoint) => fetchAgentCard(endpoint),
  ) {}

  /** The agent's card; undefined while it has none (the agent is unavailable). */
  get(agentId: string): A2aCard | undefined {
    return this.cards.get(agentId);
  }

  /** Every card held, for the admin listener's Agents page. */
  snapshot(): Record<string, A2aCard> {
    return Object.fromEntries(this.cards);
  }

  /** Fetches every A2A agent's card again; settles (never rejects) once each fetch has. */
  refresh(agents: ReadonlyMap<string, AgentConfig>): Promise<void> {
    const generation = ++this.generation;
    this.clearRetries();
    for (const id of this.cards.keys()) {
      const agent = agents.get(id);
      if (agent === undefined || agent.protocol !== 'a2a') this.cards.delete(id);
    }
    const fetches: Promise<void>[] = [];
    for (const agent of agents.values()) if (agent.protocol === 'a2a') fetches.push(this.load(agent, generation));
    return Promise.all(fetches).then(() => undefined);
  }

  stop(): void {
    this.generation++;
    this.clearRetries();
  }

  private async load(agent: AgentConfig, generation: number): Promise<void> {
    try {
      const card = await this.fetchCard(agent.upstream);
      if (generation !== this.generation) return;
      this.cards.set(agent.id, card);
      this.logger?.info({ agent: agent.id, a2a_version: card.version, streaming: card.streaming, skills: card.skills.length }, 'A2A agent card read');
    } catch (error) {
      if (generation !== this.generation) return;
      this.cards.delete(agent.id);
      this.logger?.warn(
        { agent: agent.id, upstream: agent.upstream, reason: (error as Error).message, retry_ms: CARD_RETRY_MS },
        'A2A agent card could not be read: the agent answers 503 agent_unavailable until it can',
      );
      const timer = setTimeout(() => {
        this.retries.delete(timer);
        void this.load(agent, generation);
      }, CARD_RETRY_MS).unref();
      this.retries.add(timer);
    }
  }

  private clearRetries(): void {
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
  }
}
