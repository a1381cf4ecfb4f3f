// Validation of the chat request body (docs/api.md, "Request"; docs/design.md, "Request body").
// Hand-written rather than a schema library: it runs on every request, must name the failing
// field in `param`, and the body itself is forwarded as the original bytes (never
// re-serialised).
import { containsApiKey } from '../keys/key-format.js';
import type { AgentConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import { MAX_USER_ID_CHARS } from '../ratelimit/end-user-hash.js';
import { parseGuardedJson } from './json-guard.js';

export interface ChatRequestSummary {
  userId: string | null;
  sessionId: string | null;
  /** The request's `tools` (unique strings within the agent's allow-list), or null when absent. */
  tools: readonly string[] | null;
}

export interface ValidationLimits {
  maxMessageChars: number;
}

export interface JsonLimits {
  maxJsonDepth: number;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', { param, message });
}

/**
 * Parses the body bytes as JSON text in strict UTF-8; any failure is `invalid_json`, and so
 * are nesting deeper than `limits.maxJsonDepth` (refused before parsing) and a key repeated
 * within an object (src/http/json-guard.ts).
 */
export function parseJsonBody(body: Buffer, limits: JsonLimits): unknown {
  if (body.length === 0) throw new GatewayError('invalid_json', { message: 'The request body is empty; send a JSON object.' });
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new GatewayError('invalid_json', { message: 'The request body is not valid UTF-8.' });
  }
  try {
    return parseGuardedJson(text, limits.maxJsonDepth);
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    const detail = error instanceof SyntaxError ? `: ${error.message}` : '';
    throw new GatewayError('invalid_json', { message: `The request body is not valid JSON${detail}`.slice(0, 300) });
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Counts Unicode code points, stopping once past `max` (the common short message costs one check). */
function exceedsCodePoints(text: string, max: number): boolean {
  if (text.length <= max) return false;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) i++;
    if (++count > max) return true;
  }
  return false;
}

/** Throws `invalid_request` naming the field; returns what the audit record needs. */
export function validateChatRequest(body: unknown, agent: AgentConfig, limits: ValidationLimits): ChatRequestSummary {
  if (!isPlainObject(body)) throw invalid('body', 'The request body must be a JSON object.');

  const message = body.message;
  if (message === undefined) throw invalid('message', '"message" is required.');
  if (typeof message !== 'string') throw invalid('message', '"message" must be a string.');
  if (message.length === 0) throw invalid('message', '"message" must not be empty.');
  if (exceedsCodePoints(message, limits.maxMessageChars)) {
    throw invalid('message', `"message" must be at most ${limits.maxMessageChars} characters.`);
  }

  let userId: string | null = null;
  let sessionId: string | null = null;
  const context = body.context;
  if (context !== undefined) {
    if (!isPlainObject(context)) throw invalid('context', '"context" must be an object.');
    if (context.user_id !== undefined) {
      if (typeof context.user_id !== 'string') throw invalid('context.user_id', '"context.user_id" must be a string.');
      // It is counted per end user (docs/design.md, "Agent-aware policy"): bounded like every per-client input.
      if (exceedsCodePoints(context.user_id, MAX_USER_ID_CHARS)) throw invalid('context.user_id', `"context.user_id" must be at most ${MAX_USER_ID_CHARS} characters.`);
      // It goes into the audit record: an API key pasted here would be stored in clear.
      if (containsApiKey(context.user_id)) throw invalid('context.user_id', '"context.user_id" must not contain an API key.');
      userId = context.user_id;
    }
    if (context.session_id !== undefined) {
      if (typeof context.session_id !== 'string') throw invalid('context.session_id', '"context.session_id" must be a string.');
      // It may be counted per agent run (docs/design.md, "Agent runs and nested scopes"): bounded like user_id.
      if (exceedsCodePoints(context.session_id, MAX_USER_ID_CHARS)) throw invalid('context.session_id', `"context.session_id" must be at most ${MAX_USER_ID_CHARS} characters.`);
      if (containsApiKey(context.session_id)) throw invalid('context.session_id', '"context.session_id" must not contain an API key.');
      sessionId = context.session_id;
    }
  }

  const tools = body.tools;
  let toolNames: readonly string[] | null = null;
  if (tools !== undefined) {
    if (!Array.isArray(tools)) throw invalid('tools', '"tools" must be an array of tool names.');
    const seen = new Set<string>();
    for (let i = 0; i < tools.length; i++) {
      const tool: unknown = tools[i];
      if (typeof tool !== 'string') throw invalid(`tools[${i}]`, 'Each entry of "tools" must be a string.');
      if (seen.has(tool)) throw invalid(`tools[${i}]`, `"tools" lists "${tool.slice(0, 64)}" twice.`);
      seen.add(tool);
      if (agent.tools && !agent.tools.has(tool)) {
        throw invalid(`tools[${i}]`, `"${tool.slice(0, 64)}" is not a tool of this agent; allowed: ${[...agent.tools].join(', ')}.`);
      }
    }
    toolNames = tools as string[];
  }

  const temperature = body.temperature;
  if (temperature !== undefined && (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 2))) {
    throw invalid('temperature', '"temperature" must be a number from 0 to 2.');
  }

  const maxTokens = body.max_tokens;
  if (maxTokens !== undefined && (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > agent.maxTokens)) {
    throw invalid('max_tokens', `"max_tokens" must be an integer from 1 to ${agent.maxTokens}.`);
  }

  return { userId, sessionId, tools: toolNames };
}
