// The names of everything a span carries (docs/observability.md "Attributes"): the
// OpenTelemetry GenAI and HTTP semantic conventions where they have a name, `agentgw.*` for
// the gateway's own. One table, so the docs' table and the tests read the same names.
// Never message text, never a raw key; `user.id` only with telemetry.include_user_id.
// The incubating names are written out rather than imported from
// `@opentelemetry/semantic-conventions/incubating` (the package's own advice: that entry point
// may change in a minor release); test/unit/telemetry/span-names.test.ts checks every name
// here against the package's registry, stable and incubating, and refuses deprecated ones.
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';

export const SPAN_NAME = 'invoke_agent';

export const ATTR = {
  // GenAI semantic conventions (gen_ai.*): names fixed by the incubating conventions.
  operationName: 'gen_ai.operation.name',
  // Required by the GenAI span conventions: the agent's `provider`, else PROVIDER_DEFAULT.
  providerName: 'gen_ai.provider.name',
  // The agent's configured `model` (the model the request is for); the answer's own is responseModel.
  requestModel: 'gen_ai.request.model',
  agentName: 'gen_ai.agent.name',
  conversationId: 'gen_ai.conversation.id',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestTemperature: 'gen_ai.request.temperature',
  responseModel: 'gen_ai.response.model',
  usageInputTokens: 'gen_ai.usage.input_tokens',
  usageOutputTokens: 'gen_ai.usage.output_tokens',
  toolName: 'gen_ai.tool.name',
  // General and HTTP conventions (stable).
  errorType: ATTR_ERROR_TYPE,
  httpMethod: ATTR_HTTP_REQUEST_METHOD,
  httpStatus: ATTR_HTTP_RESPONSE_STATUS_CODE,
  resendCount: ATTR_HTTP_REQUEST_RESEND_COUNT,
  serverAddress: ATTR_SERVER_ADDRESS,
  serverPort: ATTR_SERVER_PORT,
  urlFull: ATTR_URL_FULL,
  userId: 'user.id',
  // RPC conventions, on an A2A agent's attempts: the JSON-RPC method called (decision 0059).
  // `rpc.system.name`, not the deprecated `rpc.system` (decision 0096).
  rpcSystemName: 'rpc.system.name',
  rpcMethod: 'rpc.method',
  // The gateway's own: what the audit record knows, by the same names.
  keyId: 'agentgw.key_id',
  account: 'agentgw.account',
  plan: 'agentgw.plan',
  outcome: 'agentgw.outcome',
  route: 'agentgw.route',
  requestId: 'agentgw.request_id',
  tokensUsed: 'agentgw.tokens_used',
} as const;

/** `gen_ai.provider.name` of an agent whose config names no `provider`: the gateway serves it. */
export const PROVIDER_DEFAULT = 'agent-gateway';

/**
 * The span events: the stream's first byte, and each tool call (with ATTR.toolName). The
 * conventions register no event for either (their `gen_ai.*` events carry message content),
 * so they are the gateway's own (decision 0096).
 */
export const EVENT = {
  firstToken: 'agentgw.first_token',
  toolCall: 'agentgw.tool_call',
} as const;
