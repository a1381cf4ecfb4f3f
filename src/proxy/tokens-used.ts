// `tokens_used`, the audit record's token count (docs/design.md, "Usage audit records"), as
// the runner reports it: in a `/chat` answer's `metadata`, or in a stream's `done` event. One
// check of the value serves both (validTokens). With it, when asked, the answer's facts
// (src/request/answer-facts.ts): `metadata.model` and the names in `tool_calls[].tool`.
//
// A `/chat` answer is read by one pass over its bytes instead of JSON.parse: parsing builds
// every string and object of the answer only to read one number and a few names, per
// request. The scan validates the JSON it walks as it goes — strings, escapes, numbers,
// literals, nesting, nothing after the end — so for any body its answer is JSON.parse's;
// whatever it does not handle itself (a key with an escape, a top level that is not an
// object, very deep nesting) goes to JSON.parse. test/property/tokens-used.property.test.ts
// and answer-facts.property.test.ts compare the two. One file over 300 lines: the scanner's
// states share its position and its findings; split, each part would re-read the same bytes.

import { isTokenCount } from '../audit/audit-record.js';
import { answerModel, isToolName, MAX_ANSWER_MODEL_CHARS, MAX_TOOL_NAME_CHARS, recordToolCall, type AnswerFacts } from '../request/answer-facts.js';
import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  equalsAt,
  FALLBACK,
  MINUS,
  NINE,
  OPEN_ARRAY,
  OPEN_OBJECT,
  plainKeyEnd,
  QUOTE,
  skipSpace,
  skipValue,
  ZERO,
} from './json-scan.js';

const METADATA = Buffer.from('metadata');
const TOKENS_USED = Buffer.from('tokens_used');
const MODEL = Buffer.from('model');
const TOOL_CALLS = Buffer.from('tool_calls');
const TOOL = Buffer.from('tool');

/** The most bytes a string of MAX chars can take in JSON text (an escape \uXXXX is 6 bytes per UTF-16 unit). */
const MAX_MODEL_BYTES = MAX_ANSWER_MODEL_CHARS * 6 + 2;
const MAX_TOOL_BYTES = MAX_TOOL_NAME_CHARS * 6 + 2;

/**
 * Tokens from a `/chat` answer's bytes: a non-negative integer, else null (unparsable, absent
 * or not such a number). With `facts`, the answer's model and tool calls are written there
 * too (each left as it was when the answer names none: callers start from null).
 */
export function tokensFromChatResponse(chunks: Buffer[], length: number, facts: AnswerFacts | null = null): number | null {
  const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
  const scanned = scanAnswer(body, facts);
  return scanned === undefined ? answerByJsonParse(body, facts) : scanned;
}

/** The plain way, and the reference the scan must agree with. */
export function tokensByJsonParse(body: Buffer): number | null {
  return answerByJsonParse(body, null);
}

/** The plain way for tokens and facts: the reference answer-facts.property.test.ts holds the scan to. */
export function answerByJsonParse(body: Buffer, facts: AnswerFacts | null): number | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  const answer = parsed as { metadata?: { tokens_used?: unknown; model?: unknown }; tool_calls?: unknown } | null;
  if (facts !== null) {
    const model = answerModel(answer?.metadata?.model);
    if (model !== null) facts.model = model;
    const calls = answer?.tool_calls;
    if (Array.isArray(calls)) {
      for (const call of calls) {
        const tool: unknown = call !== null && typeof call === 'object' && !Array.isArray(call) ? (call as { tool?: unknown }).tool : undefined;
        if (isToolName(tool)) recordToolCall(facts, tool);
      }
    }
  }
  return validTokens(answer?.metadata?.tokens_used);
}

/** Tokens from a `done` event's data, by the same rule; with `facts`, its `model` (or `metadata.model`) too. */
export function tokensFromDoneData(data: string, facts: AnswerFacts | null = null): number | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    // A malformed done event still ends the stream; the token count is simply unknown.
    return null;
  }
  const done = parsed as { tokens_used?: unknown; model?: unknown; metadata?: { model?: unknown } } | null;
  if (facts !== null) {
    const model = answerModel(done?.model) ?? answerModel(done?.metadata?.model);
    if (model !== null) facts.model = model;
  }
  return validTokens(done?.tokens_used);
}

/** A `tool_call` event's data (docs/streaming.md): its `tool` name recorded, when it is one. */
export function readToolCallData(data: string, facts: AnswerFacts): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return;
  }
  const tool: unknown = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as { tool?: unknown }).tool : undefined;
  if (isToolName(tool)) recordToolCall(facts, tool);
}

/** The one check of a reported count: an integer from 0 to MAX_TOKENS_USED, else unknown (null): an invalid runner answer. */
function validTokens(tokens: unknown): number | null {
  return isTokenCount(tokens) ? tokens : null;
}

/** The scan alone, tokens only (see scanAnswer). */
export function scanTokensUsed(b: Uint8Array): number | null | undefined {
  return scanAnswer(b, null);
}

/**
 * The scan: tokens, or null when the body is valid JSON without usable tokens, or
 * undefined when JSON.parse has to decide — anything malformed included: the scan never
 * calls a body invalid itself. With `facts`, the model and tool calls are written there
 * only when the scan answers (so a fallback starts from untouched facts).
 */
export function scanAnswer(b: Uint8Array, facts: AnswerFacts | null): number | null | undefined {
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) return undefined;
  // Where the last top-level `metadata` member's last `tokens_used` number is, as JSON.parse
  // keeps the last of duplicate keys; -1 while there is none. The same for its last `model`
  // string, and for the `tool` strings of the last top-level `tool_calls` array (start, end pairs).
  let tokensStart = -1;
  let tokensEnd = -1;
  let modelStart = -1;
  let modelEnd = -1;
  let tools: number[] | null = null;
  const wantFacts = facts !== null;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_OBJECT) return finish(b, i + 1, -1, -1);
  for (;;) {
    if (b[i] !== QUOTE) return undefined;
    const keyEnd = plainKeyEnd(b, i + 1);
    if (keyEnd < 0) return undefined;
    const isMetadata = equalsAt(b, i + 1, keyEnd, METADATA);
    const isToolCalls = wantFacts && !isMetadata && equalsAt(b, i + 1, keyEnd, TOOL_CALLS);
    i = skipSpace(b, keyEnd + 1);
    if (b[i] !== COLON) return undefined;
    i = skipSpace(b, i + 1);
    if (isMetadata) {
      tokensStart = -1;
      tokensEnd = -1;
      modelStart = -1;
      modelEnd = -1;
    }
    if (isMetadata && b[i] === OPEN_OBJECT) {
      // The metadata object, member by member.
      i = skipSpace(b, i + 1);
      if (b[i] !== CLOSE_OBJECT) {
        for (;;) {
          if (b[i] !== QUOTE) return undefined;
          const innerKeyEnd = plainKeyEnd(b, i + 1);
          if (innerKeyEnd < 0) return undefined;
          const isTokens = equalsAt(b, i + 1, innerKeyEnd, TOKENS_USED);
          const isModel = wantFacts && !isTokens && equalsAt(b, i + 1, innerKeyEnd, MODEL);
          i = skipSpace(b, innerKeyEnd + 1);
          if (b[i] !== COLON) return undefined;
          i = skipSpace(b, i + 1);
          const valueStart = i;
          i = skipValue(b, i, 2);
          if (i < 0) return undefined;
          if (isTokens) {
            const first = b[valueStart]!;
            const isNumber = first === MINUS || (first >= ZERO && first <= NINE);
            tokensStart = isNumber ? valueStart : -1;
            tokensEnd = isNumber ? i : -1;
          } else if (isModel) {
            const isString = b[valueStart] === QUOTE;
            modelStart = isString ? valueStart : -1;
            modelEnd = isString ? i : -1;
          }
          i = skipSpace(b, i);
          if (b[i] === COMMA) {
            i = skipSpace(b, i + 1);
            continue;
          }
          if (b[i] === CLOSE_OBJECT) break;
          return undefined;
        }
      }
      i += 1;
    } else if (isToolCalls) {
      tools = b[i] === OPEN_ARRAY ? [] : null;
      i = tools === null ? skipValue(b, i, 1) : scanToolCalls(b, i, tools);
      if (i < 0) return undefined;
    } else {
      i = skipValue(b, i, 1);
      if (i < 0) return undefined;
    }
    i = skipSpace(b, i);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    if (b[i] === CLOSE_OBJECT) {
      const tokens = finish(b, i + 1, tokensStart, tokensEnd);
      if (tokens !== undefined && facts !== null) writeFacts(b, facts, modelStart, modelEnd, tools);
      return tokens;
    }
    return undefined;
  }
}

/** The `tool_calls` array at `i` (its `[`): each object element's last `tool` string, as positions in `tools`. */
function scanToolCalls(b: Uint8Array, i: number, tools: number[]): number {
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_ARRAY) return i + 1;
  for (;;) {
    if (b[i] === OPEN_OBJECT) {
      let toolStart = -1;
      let toolEnd = -1;
      i = skipSpace(b, i + 1);
      if (b[i] !== CLOSE_OBJECT) {
        for (;;) {
          if (b[i] !== QUOTE) return FALLBACK;
          const keyEnd = plainKeyEnd(b, i + 1);
          if (keyEnd < 0) return FALLBACK;
          const isTool = equalsAt(b, i + 1, keyEnd, TOOL);
          i = skipSpace(b, keyEnd + 1);
          if (b[i] !== COLON) return FALLBACK;
          i = skipSpace(b, i + 1);
          const valueStart = i;
          i = skipValue(b, i, 3);
          if (i < 0) return FALLBACK;
          if (isTool) {
            const isString = b[valueStart] === QUOTE;
            toolStart = isString ? valueStart : -1;
            toolEnd = isString ? i : -1;
          }
          i = skipSpace(b, i);
          if (b[i] === COMMA) {
            i = skipSpace(b, i + 1);
            continue;
          }
          if (b[i] === CLOSE_OBJECT) break;
          return FALLBACK;
        }
      }
      i += 1;
      if (toolStart >= 0) tools.push(toolStart, toolEnd);
    } else {
      i = skipValue(b, i, 2);
      if (i < 0) return FALLBACK;
    }
    i = skipSpace(b, i);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    return b[i] === CLOSE_ARRAY ? i + 1 : FALLBACK;
  }
}

function writeFacts(b: Uint8Array, facts: AnswerFacts, modelStart: number, modelEnd: number, tools: number[] | null): void {
  if (modelStart >= 0 && modelEnd - modelStart <= MAX_MODEL_BYTES) {
    const model = answerModel(modelText(b, modelStart, modelEnd));
    if (model !== null) facts.model = model;
  }
  if (tools === null) return;
  for (let k = 0; k < tools.length; k += 2) {
    const start = tools[k]!;
    const end = tools[k + 1]!;
    if (end - start > MAX_TOOL_BYTES) continue;
    const tool = stringValue(b, start, end);
    if (isToolName(tool)) recordToolCall(facts, tool);
  }
}

// Most answers of a runner name the same model: the last one's bytes and text are kept, so
// naming it again costs a comparison, not a string.
let lastModelBytes: Buffer = Buffer.alloc(0);
let lastModel = '';

function modelText(b: Uint8Array, start: number, end: number): string {
  const length = end - start;
  if (length === lastModelBytes.length) {
    let same = true;
    for (let k = 0; k < length; k++) {
      if (b[start + k] !== lastModelBytes[k]) {
        same = false;
        break;
      }
    }
    if (same) return lastModel;
  }
  const text = stringValue(b, start, end);
  lastModelBytes = Buffer.from(b.subarray(start, end));
  lastModel = text;
  return text;
}

/** A validated JSON string's value, quotes included in start..end: decoded as UTF-8, or by JSON.parse when it holds an escape. */
function stringValue(b: Uint8Array, start: number, end: number): string {
  let plain = true;
  for (let k = start + 1; k < end - 1; k++) {
    if (b[k] === BACKSLASH) {
      plain = false;
      break;
    }
  }
  // The relays hand a Buffer: decoded in place, without a view object per string.
  const bytes = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (plain) return bytes.toString('utf8', start + 1, end - 1);
  return JSON.parse(bytes.toString('utf8', start, end)) as string;
}

function finish(b: Uint8Array, end: number, tokensStart: number, tokensEnd: number): number | null | undefined {
  // Only whitespace may follow the top-level object.
  if (skipSpace(b, end) !== b.length) return undefined;
  if (tokensStart < 0) return null;
  return validTokens(numberValue(b, tokensStart, tokensEnd));
}

/** A validated JSON number's value: digits only are summed here, anything else via Number(). */
function numberValue(b: Uint8Array, start: number, end: number): number {
  if (end - start <= 15) {
    let value = 0;
    let i = start;
    for (; i < end; i++) {
      const c = b[i]!;
      if (c < ZERO || c > NINE) break;
      value = value * 10 + (c - ZERO);
    }
    if (i === end) return value;
  }
  return Number(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('latin1'));
}
