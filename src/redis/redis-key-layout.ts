// Redis Cluster hash tags (docs/operations.md, "Key layout"). A cluster runs a script or a
// MULTI only when every key it touches is in one slot; a key's slot is the CRC16 of its hash
// tag, the text between its first "{" and the next "}" when that is not empty, else of the
// whole key. The gateway's rule: every key one script or pipeline touches shares one tag.
import { TAGGABLE_KEY } from '../config/schema.js';

/** What Redis Cluster hashes for `key`: its hash tag, or the whole key when it has none. */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

/**
 * A key in the same slot as `key`, for data that a script writes together with it: `{tag}:suffix`
 * (e.g. next to the audit stream `agentgw:audit`, `{agentgw:audit}:usage:…`). `key` must be
 * one that `isTaggableKey` accepts.
 */
export function keyBeside(key: string, suffix: string): string {
  return `{${hashTagOf(key)}}:${suffix}`;
}

/**
 * Whether `keyBeside` can put keys in `key`'s slot: `key` has no braces, or exactly one
 * non-empty `{tag}` and no other brace (an untagged key with a stray brace could not be
 * written as a tag).
 */
export function isTaggableKey(key: string): boolean {
  return TAGGABLE_KEY.test(key);
}
