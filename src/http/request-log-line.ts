// The per-request log line, built directly instead of through pino's generic object walk
// (for..in, hasOwnProperty, serializer and stringifier look-ups per field): the fields are
// known, so the line is a handful of concatenations. The text is byte-identical to what
// `logger.info(fields, 'request')` writes — same level/time/bindings prefix (taken from the
// logger itself), same field order, same string escaping, undefined fields left out — and it
// goes to the logger's own destination, so file, stdout and pretty rendering (which renders
// from this JSON line) see exactly the line pino would have written. A logger configured in a
// way this does not reproduce (mixin, hooks, log formatter, serializers for these keys, …)
// keeps going through pino (test/property/request-log-line.property.test.ts holds the proof).
import { tracingChannel } from 'node:diagnostics_channel';
import { symbols, type Logger } from 'pino';
// pino, like JSON.stringify, writes a non-finite number as null.
import { isPlainJsonText, jsonHundredthsLiteral, jsonNumberLiteral, PlainTextMemo, requestIdPlainMemo } from '../json-text.js';

export interface RequestLogFields {
  request_id: string;
  trace_id: string;
  agent: string;
  route: string;
  key_id: string | undefined;
  status: number;
  outcome: string;
  error: string | undefined;
  upstream_failure: string | undefined;
  latency_ms: number;
  upstream_latency_ms: number | undefined;
  tokens_used: number | null;
  client_ip: string;
}

export type RequestLogWriter = (fields: RequestLogFields) => void;

const MESSAGE = 'request';
const FIELD_NAMES: readonly (keyof RequestLogFields)[] = [
  'request_id',
  'trace_id',
  'agent',
  'route',
  'key_id',
  'status',
  'outcome',
  'error',
  'upstream_failure',
  'latency_ms',
  'upstream_latency_ms',
  'tokens_used',
  'client_ip',
];

// Not in pino's type declarations, but in its `symbols` export.
const msgPrefixSym = (symbols as unknown as Record<string, symbol>).msgPrefixSym;
// pino traces its line building on this channel; with a subscriber, pino builds the line.
const asJsonChannel = tracingChannel('pino_asJson');

type Internals = Record<symbol, unknown>;

/** `logger.info(fields, 'request')`, written directly when the logger allows it. */
export function requestLogWriter(logger: Logger): RequestLogWriter {
  const viaPino: RequestLogWriter = (fields) => logger.info(fields, MESSAGE);
  if (!canWriteDirectly(logger)) return viaPino;
  const internal = logger as unknown as Internals;
  const stream = internal[symbols.streamSym] as { write(line: string): unknown };
  const time = internal[symbols.timeSym] as () => string;
  const levelValue = logger.levels.values.info!;
  const end = internal[symbols.endSym] as string;
  // The message and the closing brace, as one piece.
  const tail = `,"msg":${jsonString(MESSAGE)}${end}`;
  return (fields) => {
    if (!logger.isLevelEnabled('info')) return;
    if (asJsonChannel.hasSubscribers) {
      viaPino(fields);
      return;
    }
    // Read per line, as pino does: bindings can change (setBindings).
    const prefix = (internal[symbols.lsCacheSym] as Record<number, string>)[levelValue]! + time() + (internal[symbols.chindingsSym] as string);
    stream.write(prefix + requestFieldsJson(fields) + tail);
  };
}

const plainAgent = new PlainTextMemo();
const plainKeyId = new PlainTextMemo();
const plainClientIp = new PlainTextMemo();

/** The `,"name":value` pairs pino writes for these fields, in the same order. */
export function requestFieldsJson(f: RequestLogFields): string {
  const keyId = f.key_id;
  const error = f.error;
  const failure = f.upstream_failure;
  // Every string of a gateway's line is plain (ids, names, addresses): its quotes then go
  // into the constant pieces, which halves the concatenations and skips a call per field.
  // Fields that repeat (and the request id the audit record checked) go through a memo of the last plain one.
  if (
    requestIdPlainMemo.isPlain(f.request_id) &&
    isPlainJsonText(f.trace_id) &&
    plainAgent.isPlain(f.agent) &&
    isPlainJsonText(f.route) &&
    (keyId === undefined || plainKeyId.isPlain(keyId)) &&
    isPlainJsonText(f.outcome) &&
    (error === undefined || isPlainJsonText(error)) &&
    (failure === undefined || isPlainJsonText(failure)) &&
    plainClientIp.isPlain(f.client_ip)
  ) {
    let out = ',"request_id":"' + f.request_id + '","trace_id":"' + f.trace_id + '","agent":"' + f.agent + '","route":"' + f.route;
    if (keyId !== undefined) out += '","key_id":"' + keyId;
    out += '","status":' + jsonNumberLiteral(f.status) + ',"outcome":"' + f.outcome;
    if (error !== undefined) out += '","error":"' + error;
    if (failure !== undefined) out += '","upstream_failure":"' + failure;
    out += '","latency_ms":' + jsonHundredthsLiteral(f.latency_ms);
    if (f.upstream_latency_ms !== undefined) out += ',"upstream_latency_ms":' + jsonHundredthsLiteral(f.upstream_latency_ms);
    return out + ',"tokens_used":' + (f.tokens_used === null ? 'null' : jsonNumberLiteral(f.tokens_used)) + ',"client_ip":"' + f.client_ip + '"';
  }
  let out = `,"request_id":${jsonString(f.request_id)},"trace_id":${jsonString(f.trace_id)},"agent":${jsonString(f.agent)},"route":${jsonString(f.route)}`;
  if (keyId !== undefined) out += `,"key_id":${jsonString(keyId)}`;
  out += `,"status":${jsonNumberLiteral(f.status)},"outcome":${jsonString(f.outcome)}`;
  if (error !== undefined) out += `,"error":${jsonString(error)}`;
  if (failure !== undefined) out += `,"upstream_failure":${jsonString(failure)}`;
  // Durations come rounded to hundredths (finishRequest).
  out += `,"latency_ms":${jsonHundredthsLiteral(f.latency_ms)}`;
  if (f.upstream_latency_ms !== undefined) out += `,"upstream_latency_ms":${jsonHundredthsLiteral(f.upstream_latency_ms)}`;
  out += `,"tokens_used":${f.tokens_used === null ? 'null' : jsonNumberLiteral(f.tokens_used)},"client_ip":${jsonString(f.client_ip)}`;
  return out;
}

/**
 * pino's own string escaping (lib/tools.js asString), reproduced exactly: strings up to 100
 * units without control characters get only `"` and `\` escaped (lone surrogates pass
 * through as they are); anything else goes through JSON.stringify.
 */
export function jsonString(text: string): string {
  const length = text.length;
  if (length > 100) return JSON.stringify(text);
  let result = '';
  let last = 0;
  let point = 255;
  for (let i = 0; i < length && point >= 32; i++) {
    point = text.charCodeAt(i);
    if (point === 34 || point === 92) {
      result += text.slice(last, i) + '\\';
      last = i;
    }
  }
  if (point < 32) return JSON.stringify(text);
  return `"${result}${text.slice(last)}"`;
}

/** True when pino would write these fields plainly: nothing configured that changes them. */
function canWriteDirectly(logger: Logger): boolean {
  const internal = logger as unknown as Internals;
  const formatters = internal[symbols.formattersSym] as { log?: unknown } | undefined;
  const hooks = internal[symbols.hooksSym] as { logMethod?: unknown; streamWrite?: unknown } | undefined;
  const serializers = (internal[symbols.serializersSym] ?? {}) as Record<string, unknown>;
  const stringifiers = (internal[symbols.stringifiersSym] ?? {}) as Record<string | symbol, unknown>;
  const stream = internal[symbols.streamSym] as { write?: unknown; [key: symbol]: unknown } | undefined;
  const errorKey = internal[symbols.errorKeySym];
  const levelValue = logger.levels.values.info;
  if (levelValue === undefined || typeof (internal[symbols.lsCacheSym] as Record<number, unknown> | undefined)?.[levelValue] !== 'string') return false;
  if (typeof internal[symbols.timeSym] !== 'function' || typeof internal[symbols.endSym] !== 'string') return false;
  if (typeof internal[symbols.chindingsSym] !== 'string' || typeof stream?.write !== 'function') return false;
  if (internal[symbols.mixinSym] || formatters?.log || hooks?.logMethod || hooks?.streamWrite) return false;
  if (internal[msgPrefixSym!] !== undefined || internal[symbols.messageKeySym] !== 'msg' || internal[symbols.nestedKeySym]) return false;
  if (stream[symbols.needsMetadataGsym] === true) return false;
  if (stringifiers[symbols.wildcardFirstSym] || stringifiers.msg || serializers.msg) return false;
  for (const name of FIELD_NAMES) {
    if (serializers[name] || stringifiers[name] || name === errorKey) return false;
  }
  return true;
}
