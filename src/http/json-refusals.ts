// The two refusals of the JSON guard (docs/security.md), shared by the guard
// (src/http/json-guard.ts) and its exact reader (src/http/exact-json-reader.ts) so that
// both answer a body with the same words.
import { GatewayError } from '../errors.js';

export function tooDeep(maxDepth: number): GatewayError {
  return new GatewayError('invalid_json', { message: `The request body nests objects and arrays more than ${maxDepth} levels deep.` });
}

export function repeatedKey(): GatewayError {
  return new GatewayError('invalid_json', { message: 'The request body repeats a key within one JSON object; send each key once.' });
}
