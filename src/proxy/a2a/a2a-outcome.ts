// What an A2A answer has said so far (the task, its state, the model and token count its
// metadata named), and the gateway's answers built from it: the `/chat` body, and the
// stream's `token` and `done` events (docs/a2a.md, "What maps to what").
import { isFailedState, isInterruptedState, type A2aTaskState, type A2aUpdate } from './a2a-protocol.js';

export class A2aOutcome {
  taskId: string | null = null;
  contextId: string | null = null;
  state: A2aTaskState | null = null;
  model: string | null = null;
  tokensUsed: number | null = null;
  /** A Message answered: the exchange is over, with no task to cancel. */
  sawMessage = false;

  apply(update: A2aUpdate): void {
    if (update.taskId !== null && update.taskId !== '') this.taskId = update.taskId;
    if (update.contextId !== null && update.contextId !== '') this.contextId = update.contextId;
    if (update.state !== null) this.state = update.state;
    if (update.model !== null) this.model = update.model;
    if (update.tokensUsed !== null) this.tokensUsed = update.tokensUsed;
    if (update.kind === 'message') this.sawMessage = true;
  }

  get failed(): boolean {
    return isFailedState(this.state);
  }

  /** The answer is whole: a Message, a completed task, or one paused for the client. */
  get answered(): boolean {
    return this.sawMessage || this.state === 'completed' || isInterruptedState(this.state);
  }

  /** A task still running on the agent that nobody will read: the one to cancel. */
  get running(): boolean {
    return this.taskId !== null && !this.sawMessage && !this.answered && !this.failed;
  }

  /** The task the client may continue (`context.task_id`), and where it stands. */
  private a2aFacts(): { task_id: string | null; context_id: string | null; state: A2aTaskState | null } {
    return { task_id: this.sawMessage ? null : this.taskId, context_id: this.contextId, state: this.sawMessage ? null : this.state };
  }

  chatBody(text: string, latencyMs: number): string {
    return JSON.stringify({ response: text, tool_calls: [], metadata: { model: this.model, tokens_used: this.tokensUsed, latency_ms: latencyMs }, a2a: this.a2aFacts() });
  }

  doneEvent(latencyMs: number): string {
    return `event: done\ndata: ${JSON.stringify({ tokens_used: this.tokensUsed, latency_ms: latencyMs, model: this.model, a2a: this.a2aFacts() })}\n\n`;
  }
}

export function tokenEvent(text: string): string {
  return `event: token\ndata: ${JSON.stringify({ content: text })}\n\n`;
}
