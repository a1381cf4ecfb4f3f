// A Redis operation as one typed object (docs/design.md, "Redis operations"): its versioned
// name, its Lua source, the encoder of its request and the decoder of its reply. The name is
// both the command the script is registered under (EVALSHA, ioredis re-sending the source on
// NOSCRIPT) and the tag its reply starts with, so a gateway never reads another version's
// reply. A change of arguments, reply or behaviour is a new version, a new name: two gateway
// versions on one Redis then run side by side, each its own scripts.
//
// A reply is laid out once, as a list of field names (replyLayout): the script builds its
// reply from that list (luaReply) and the decoder reads each field by its name's position,
// never by a number written by hand, so the two cannot drift apart.
import type { RedisClient } from './redis-client.js';

/** `agw_<what>_v<N>`: what every operation's name must look like (test/unit/redis/redis-operations.test.ts). */
export const VERSIONED_OPERATION_NAME = /^agw_[a-z][a-z0-9_]*_v[1-9][0-9]*$/;

/** The encoded call as ioredis takes it: [...KEYS, ...ARGV], led by the key count when the operation's varies. */
export type EncodedCall = Array<string | number>;

export interface RedisOperation<Request, Reply> {
  /** The versioned name: the registered command and the tag its reply starts with. */
  readonly name: string;
  readonly source: string;
  /** How many leading arguments are keys; undefined: it varies, and the encoded call starts with it. */
  readonly numberOfKeys: number | undefined;
  /** Properties, not methods: their parameters are then checked contravariantly, so one operation never takes another's request. */
  readonly encode: (request: Request) => EncodedCall;
  /** The reply as a typed value; throws on anything that is not exactly this version's reply. */
  readonly decode: (reply: unknown, request: Request) => Reply;
}

// `any` here only to match every operation; RequestOf/ReplyOf give each call its own exact types.
export type AnyRedisOperation = RedisOperation<any, any>;
export type RequestOf<Op> = Op extends RedisOperation<infer Request, unknown> ? Request : never;
export type ReplyOf<Op> = Op extends RedisOperation<never, infer Reply> ? Reply : never;

/** Where every reply's tag is: first, before its layout's fields. */
export const TAG_POSITION = 0;

/** A reply's fields after the tag (position 0), each at a fixed position named by its field. */
export interface ReplyLayout<Field extends string> {
  readonly fields: readonly Field[];
  /** Position of each field in the decoded reply array (the tag is at 0). */
  readonly at: { readonly [F in Field]: number };
  /** Values in the reply: the tag and the fields. */
  readonly length: number;
}

export function replyLayout<const Fields extends readonly string[]>(...fields: Fields): ReplyLayout<Fields[number]> {
  return { fields, at: positions(fields, TAG_POSITION + 1), length: fields.length + 1 };
}

/** Field name → its position, counted from `first`: an argument or a reply layout, defined once. */
export function positions<const Fields extends readonly string[]>(fields: Fields, first = 0): { readonly [F in Fields[number]]: number } {
  const at: Record<string, number> = {};
  fields.forEach((field, i) => {
    at[field] = first + i;
  });
  return Object.freeze(at) as { readonly [F in Fields[number]]: number };
}

/** The Lua table constructor of a reply: the tag, then each field's Lua expression in the layout's order. */
export function luaReply<Field extends string>(tag: string, layout: ReplyLayout<Field>, values: { readonly [F in Field]: string }): string {
  return layout.fields.length === 0 ? `{ '${tag}' }` : `{ '${tag}', ${luaFields(layout, values)} }`;
}

/** The fields' Lua expressions in the layout's order, comma-separated (for a reply built around a tag variable). */
export function luaFields<Field extends string>(layout: ReplyLayout<Field>, values: { readonly [F in Field]: string }): string {
  return layout.fields.map((field) => values[field]).join(', ');
}

/** Lua's 1-based index of a position of a decoded reply (or of an argument list counted from 0). */
export function luaIndex(position: number): number {
  return position + 1;
}

/** True when `reply` is `tag`'s reply with exactly the layout's values (before any trailing rows, when `rows`). */
export function isReplyOf(tag: string, layout: ReplyLayout<string>, reply: unknown, rows = false): reply is unknown[] {
  return Array.isArray(reply) && reply[TAG_POSITION] === tag && (rows ? reply.length >= layout.length : reply.length === layout.length);
}

type ScriptCall = (...args: EncodedCall) => Promise<unknown>;

/** Registers the operation on the client under its versioned name (an unversioned one is refused). */
export function defineOperation(client: RedisClient, operation: AnyRedisOperation): void {
  if (!VERSIONED_OPERATION_NAME.test(operation.name)) throw new TypeError(`redis operation name ${operation.name} has no version (agw_<what>_v<N>)`);
  client.defineCommand(operation.name, operation.numberOfKeys === undefined ? { lua: operation.source } : { lua: operation.source, numberOfKeys: operation.numberOfKeys });
}

/** The client's bound call of a defined operation (what a hot path keeps, to skip the lookup). */
export function operationCall(client: RedisClient, operation: AnyRedisOperation): ScriptCall {
  const call = (client as unknown as Record<string, ScriptCall | undefined>)[operation.name];
  if (call === undefined) throw new TypeError(`redis operation ${operation.name} was not defined on this client`);
  return call.bind(client);
}

/** One call of a defined operation: the request encoded, the reply decoded. */
export async function callOperation<Op extends AnyRedisOperation>(client: RedisClient, operation: Op, request: RequestOf<Op>): Promise<ReplyOf<Op>> {
  return operation.decode(await operationCall(client, operation)(...operation.encode(request)), request) as ReplyOf<Op>;
}

/** A defined operation queued on a pipeline; its reply, from exec(), goes through `operation.decode`. */
export function queueOperation<Op extends AnyRedisOperation>(pipeline: ReturnType<RedisClient['pipeline']>, operation: Op, request: RequestOf<Op>): void {
  const queue = (pipeline as unknown as Record<string, ((...args: EncodedCall) => unknown) | undefined>)[operation.name];
  if (queue === undefined) throw new TypeError(`redis operation ${operation.name} was not defined on this client`);
  queue.apply(pipeline, operation.encode(request));
}

/** A reply that is not its operation's, or not of its version (a store then treats it as Redis failing). */
export class UnexpectedReplyError extends Error {
  constructor(readonly operation: string, reply: unknown) {
    // Bounded: a hostile or broken server must not fill the logs.
    super(`redis operation ${operation} returned an unexpected reply: ${JSON.stringify(reply)?.slice(0, 200)}`);
    this.name = 'UnexpectedReplyError';
  }
}
