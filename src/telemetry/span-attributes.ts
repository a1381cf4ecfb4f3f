// The names of everything a span carries (docs/observability.md "Attributes"): the
// OpenTelemetry GenAI and HTTP semantic conventions where they have a name, `agentgw.*` for
// the gateway's own. One table, so the docs' table and the tests read the same names.
// Never message text, never a raw key; `user.id` only with telemetry.include_user_id.
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
  rpcSystem: 'rpc.system',
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

/** The span events: the stream's first byte, and each tool call (with ATTR.toolName). */
export const EVENT = {
  firstToken: 'gen_ai.first_token',
  toolCall: 'gen_ai.tool_call',
} as const;
