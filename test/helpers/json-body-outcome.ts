// parseJsonBody's answer to a text, as a value to compare: the parsed value, or the message
// of its `invalid_json` refusal (any other error is thrown). Shared by the JSON guard's unit
// and property tests.
import { expect } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import { parseJsonBody } from '../../src/http/validate-chat-request.js';

export function jsonBodyOutcome(text: string, maxJsonDepth = 64): { value: unknown } | string {
  try {
    return { value: parseJsonBody(Buffer.from(text), { maxJsonDepth }) };
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    expect(error.type).toBe('invalid_json');
    return error.message;
  }
}
