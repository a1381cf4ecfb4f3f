// A slow, obvious reading of JSON text that JSON.parse accepted: how deep its objects and
// arrays nest, whether any object names a key twice (after unescaping, as JSON.parse
// compares them), and the value itself, built without JSON.parse. The model the JSON guard
// is held to. It does not ask JSON.parse because V8's JSON.parse in Node 24 and 26 can read
// an escaped key wrong (nodejs/node#63785; src/http/exact-json-reader.ts).
const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

export interface JsonShape {
  depth: number;
  duplicateKey: boolean;
  /** What JSON.parse gives for the text when it reads keys right (for a repeated key, its last value). */
  value: unknown;
  /** For each object, in the order its opening brace appears: its keys as written (between the quotes). */
  objectKeyTexts: string[][];
}

export function referenceJsonShape(text: string): JsonShape {
  let i = 0;
  let maxDepth = 0;
  let duplicateKey = false;
  const objectKeyTexts: string[][] = [];
  const skipWhitespace = (): void => {
    while (i < text.length && WHITESPACE.has(text[i]!)) i++;
  };
  const readString = (): string => {
    let out = '';
    i++;
    while (text[i] !== '"') {
      if (text[i] === '\\') {
        const kind = text[i + 1]!;
        if (kind === 'u') {
          out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
          i += 6;
        } else {
          out += ESCAPES[kind];
          i += 2;
        }
      } else {
        out += text[i];
        i++;
      }
    }
    i++;
    return out;
  };
  const readValue = (depth: number): unknown => {
    skipWhitespace();
    const first = text[i];
    if (first === '{' || first === '[') {
      maxDepth = Math.max(maxDepth, depth + 1);
      const close = first === '{' ? '}' : ']';
      const keys = new Set<string>();
      const keyTexts: string[] = [];
      if (first === '{') objectKeyTexts.push(keyTexts);
      const object: Record<string, unknown> = {};
      const array: unknown[] = [];
      i++;
      skipWhitespace();
      if (text[i] === close) {
        i++;
        return first === '{' ? object : array;
      }
      for (;;) {
        if (first === '{') {
          skipWhitespace();
          const start = i;
          const key = readString();
          keyTexts.push(text.slice(start + 1, i - 1));
          if (keys.has(key)) duplicateKey = true;
          keys.add(key);
          skipWhitespace();
          i++; // the colon
          // An own data property, as JSON.parse makes one (assignment to "__proto__" would set the prototype).
          Object.defineProperty(object, key, { value: readValue(depth + 1), writable: true, enumerable: true, configurable: true });
        } else {
          array.push(readValue(depth + 1));
        }
        skipWhitespace();
        if (text[i++] === ',') continue;
        return first === '{' ? object : array;
      }
    }
    if (first === '"') return readString();
    const start = i;
    while (i < text.length && !',]} \t\n\r'.includes(text[i]!)) i++;
    const literal = text.slice(start, i);
    if (literal === 'true') return true;
    if (literal === 'false') return false;
    if (literal === 'null') return null;
    return Number(literal);
  };
  const value = readValue(0);
  return { depth: maxDepth, duplicateKey, value, objectKeyTexts };
}
