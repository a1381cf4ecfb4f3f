// JSON text for values whose shape is known, written without JSON.stringify's generic walk.
// Exact: each function returns what JSON.stringify returns for the same value
// (test/property/json-text.property.test.ts holds the proof).

/**
 * JSON.stringify(text): quotes alone when nothing in the text needs escaping (the common
 * case, checked in one pass); otherwise JSON.stringify itself, which escapes control
 * characters, `"` and `\` and lone surrogates. Any surrogate takes that path, paired or not.
 */
export function jsonStringLiteral(text: string): string {
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x20 || unit === 0x22 || unit === 0x5c || (unit >= 0xd800 && unit <= 0xdfff)) return JSON.stringify(text);
  }
  return `"${text}"`;
}

/**
 * Whether a string's JSON text is the string itself between quotes, by JSON.stringify's rules
 * and by pino's (which leaves lone surrogates alone in strings up to 100 units): no control
 * character, no quote, no backslash, no surrogate. Writers that know a field is plain put its quotes
 * into their constant pieces.
 */
export function isPlainJsonText(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x20 || unit === 0x22 || unit === 0x5c || (unit >= 0xd800 && unit <= 0xdfff)) return false;
  }
  return true;
}

/**
 * isPlainJsonText with a memory of the last string it found plain, for one field of a
 * writer: a field that holds the same string request after request (an agent id, a key's
 * id, account and plan, a connection's address) costs one comparison instead of a scan of
 * its characters. Exact whatever the text: equal strings are equally plain.
 */
export class PlainTextMemo {
  private last = '';

  isPlain(text: string): boolean {
    if (text === this.last) return true;
    if (!isPlainJsonText(text)) return false;
    this.last = text;
    return true;
  }
}

/**
 * The request id's memo, shared by the two lines that carry it: the audit record (made as
 * the response ends) and the request log line (written when it closes) check the same
 * string, so the second check is a comparison.
 */
export const requestIdPlainMemo = new PlainTextMemo();

/** JSON.stringify(value) for a number: its shortest text, null when not finite. */
export function jsonNumberLiteral(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}

/**
 * JSON.stringify(value) for a number rounded to hundredths (`Math.round(x * 100) / 100`, as the
 * request log writes durations), from its integer hundredths: V8's shortest-double formatting
 * of a fraction is costly on the request path (decision 0012). The text is the same because the
 * double nearest to W.RR prints as W.RR, trailing zeros dropped. Any other number (negative,
 * larger, or with more decimals) goes through jsonNumberLiteral.
 */
export function jsonHundredthsLiteral(value: number): string {
  const hundredths = Math.round(value * 100);
  if (!(hundredths >= 0 && hundredths < 1e9 && hundredths / 100 === value)) return jsonNumberLiteral(value);
  const rest = hundredths % 100;
  const whole = (hundredths - rest) / 100;
  if (rest === 0) return String(whole);
  if (rest % 10 === 0) return `${whole}.${rest / 10}`;
  return `${whole}.${rest < 10 ? '0' : ''}${rest}`;
}
