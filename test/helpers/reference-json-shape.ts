// A slow, obvious reading of JSON text that JSON.parse accepted: how deep its objects and
// arrays nest, and whether any object names a key twice (after unescaping, as JSON.parse
// compares them). The model the JSON guard is held to.
const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

export interface JsonShape {
  depth: number;
  duplicateKey: boolean;
}

export function referenceJsonShape(text: string): JsonShape {
  let i = 0;
  let maxDepth = 0;
  let duplicateKey = false;
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
  const readValue = (depth: number): void => {
    skipWhitespace();
    const first = text[i];
    if (first === '{' || first === '[') {
      maxDepth = Math.max(maxDepth, depth + 1);
      const close = first === '{' ? '}' : ']';
      const keys = new Set<string>();
      i++;
      skipWhitespace();
      if (text[i] === close) {
        i++;
        return;
      }
      for (;;) {
        if (first === '{') {
          skipWhitespace();
          const key = readString();
          if (keys.has(key)) duplicateKey = true;
          keys.add(key);
          skipWhitespace();
          i++; // the colon
        }
        readValue(depth + 1);
        skipWhitespace();
        if (text[i++] === ',') continue;
        return;
      }
    }
    if (first === '"') {
      readString();
      return;
    }
    while (i < text.length && !',]} \t\n\r'.includes(text[i]!)) i++;
  };
  readValue(0);
  return { depth: maxDepth, duplicateKey };
}
