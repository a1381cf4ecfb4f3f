// A "poison" for V8's escaped-key bug (nodejs/node#63785; src/http/exact-json-reader.ts), made
// to hit one key of a given JSON text: on Node 24 and 26, after JSON.parse of the poison, a
// JSON.parse of the text reads that key wrong. On Node 22 it is an ordinary parse.
import { referenceJsonShape } from './reference-json-shape.js';

/**
 * JSON text of an object with the same keys as the chosen object of `objectKeyTexts` (as from
 * referenceJsonShape) up to the chosen escaped key, then a key made of that key's first
 * characters as written, as many as it has once decoded: the key V8 then reads in its place.
 * `choice` picks among the escaped keys; undefined when the text has none (nothing to misread).
 */
export function escapedKeyPoison(objectKeyTexts: string[][], choice: number): string | undefined {
  const escaped: [keys: string[], at: number][] = [];
  for (const keys of objectKeyTexts) keys.forEach((key, at) => key.includes('\\') && escaped.push([keys, at]));
  if (escaped.length === 0) return undefined;
  const [keys, at] = escaped[choice % escaped.length]!;
  const written = keys[at]!;
  const decoded = referenceJsonShape(`"${written}"`).value as string;
  const misread = written.slice(0, decoded.length);
  return `{${[...keys.slice(0, at).map((key) => `"${key}":0`), `${JSON.stringify(misread)}:0`].join(',')}}`;
}
