// The JSON number grammar, a byte at a time, for the streaming scan (json-stream-scan.ts):
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?

export const N_MINUS = 0; // after `-`: a digit must come
export const N_ZERO = 1; // a leading 0: `.`, `e` or the end
export const N_INT = 2; // in the integer digits
const N_DOT = 3; // after `.`: a digit must come
const N_FRAC = 4;
const N_E = 5; // after `e`: a sign or digit
const N_E_SIGN = 6; // after the exponent's sign: a digit
const N_EXP = 7;
/** The number ended before the byte (which belongs to what follows). */
export const NUMBER_ENDED = -1;
export const NUMBER_INVALID = -2;

/** The state of a number that starts with byte `c` (a minus or a digit). */
export function numberStart(c: number): number {
  return c === 0x2d ? N_MINUS : c === 0x30 ? N_ZERO : N_INT;
}

/** Whether a number in `state` is whole (may end here). */
export function numberCanEnd(state: number): boolean {
  return state === N_ZERO || state === N_INT || state === N_FRAC || state === N_EXP;
}

/** The state after byte `c`, or NUMBER_ENDED / NUMBER_INVALID. */
export function numberStep(state: number, c: number): number {
  const digit = c >= 0x30 && c <= 0x39;
  switch (state) {
    case N_MINUS:
      return digit ? (c === 0x30 ? N_ZERO : N_INT) : NUMBER_INVALID;
    case N_ZERO:
    case N_INT:
      if (digit) return state === N_INT ? N_INT : NUMBER_INVALID; // a leading zero followed by a digit
      if (c === 0x2e) return N_DOT;
      return c === 0x65 || c === 0x45 ? N_E : NUMBER_ENDED;
    case N_DOT:
      return digit ? N_FRAC : NUMBER_INVALID;
    case N_FRAC:
      if (digit) return N_FRAC;
      return c === 0x65 || c === 0x45 ? N_E : NUMBER_ENDED;
    case N_E:
      if (c === 0x2b || c === 0x2d) return N_E_SIGN;
      return digit ? N_EXP : NUMBER_INVALID;
    case N_E_SIGN:
      return digit ? N_EXP : NUMBER_INVALID;
    default:
      // N_EXP
      return digit ? N_EXP : NUMBER_ENDED;
  }
}
