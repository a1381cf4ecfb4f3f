// One chat request on its way through the pipeline's stages (chat-pipeline.ts): what the
// stages share, and the body's receiver. The pipeline is seen through the two stages the body
// hands back to, so this file does not import the pipeline.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentConfig, GatewayConfig } from '../config/schema.js';
import type { Admission } from '../policy/admission.js';
import type { TraceContext } from '../proxy/traceparent.js';
import type { StreamSlot } from '../ratelimit/rate-limiter.js';
import type { RequestState } from '../request/request-state.js';
import type { ClientAddress } from './client-address.js';
import type { BodyReceiver } from './read-body.js';

/** The stages a request's body hands back to. */
export interface BodyStages {
  forward(request: ChatRequest, body: Buffer): void;
  fail(request: ChatRequest, error: unknown): void;
}

/** One request on its way through the stages: what they share, and the body's receiver. */
export class ChatRequest implements BodyReceiver {
  /** Known from the route stage on. */
  agent: AgentConfig | undefined = undefined;
  /**
   * The request's admission under its key's compiled policy (src/policy/), set by the limit
   * stage unless the plan limits nothing: the one object the limit, the after-body decision
   * and finish()'s charge ask.
   */
  admission: Admission | undefined = undefined;
  /** Set while a body waits for the after-body limit's decision, with its parsed value (an A2A call is built from it). */
  body: Buffer | undefined = undefined;
  parsed: unknown = undefined;
  /** The concurrency-cap slot this stream holds, released by finish() whatever ended it. */
  slot: StreamSlot | undefined = undefined;
  /** Set by finish(): a slot granted after the response closed is released at once. */
  finished = false;

  constructor(
    readonly pipeline: BodyStages,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly state: RequestState,
    /** The config the request started with: a reload does not change it mid-request. */
    readonly config: GatewayConfig,
    readonly address: ClientAddress,
    readonly trace: TraceContext,
  ) {}

  bodyReceived(body: Buffer): void {
    this.pipeline.forward(this, body);
  }

  bodyFailed(error: Error): void {
    this.pipeline.fail(this, error);
  }
}
