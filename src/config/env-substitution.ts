// `${NAME}` and `${NAME:-default}` in the config are replaced from the environment, so
// secrets (Redis passwords) stay out of the file; `$${` escapes a literal `${`.
//
// Values go into the parsed YAML's scalars, never into its text: a value holding `#`, `: `,
// quotes or a newline stays one value (a password with `#` is not cut at it, and a crafted
// value cannot add keys). Each reference is first swapped for a placeholder token that is a
// plain word in any YAML context (flow mappings like `{ port: ${PORT} }` included), the text
// is parsed, and every scalar that holds a token gets the value. A scalar that is nothing but
// one unquoted reference (`port: ${PORT}`) is read as a boolean or a number when its value
// looks like one, as YAML would read the same text; quote it (`"${PORT}"`) to keep a string.
import { randomBytes } from 'node:crypto';
import { parseDocument, visit, type Document, type Scalar } from 'yaml';

const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export class MissingEnvironmentVariableError extends Error {
  constructor(readonly names: string[]) {
    super(`config refers to unset environment variable(s): ${names.join(', ')} (set them, or write \${NAME:-default})`);
  }
}

/** A reference's value: the variable when set and not empty, else its default; undefined when neither. */
function referenceValue(name: string, fallback: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const value = env[name];
  if (value !== undefined && value !== '') return value;
  return fallback;
}

const YAML_BOOLEAN = /^(?:true|True|TRUE|false|False|FALSE)$/;
const YAML_NUMBER = /^[-+]?(?:[0-9]+|[0-9]*\.[0-9]+(?:[eE][-+]?[0-9]+)?|[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)$/;

/** How YAML's core schema reads a plain scalar, for the booleans and numbers only. */
function asPlainScalar(value: string): string | number | boolean {
  if (YAML_BOOLEAN.test(value)) return value.toLowerCase() === 'true';
  if (YAML_NUMBER.test(value)) return Number(value);
  return value;
}

/**
 * Parses a YAML config text with its `${…}` references replaced in the parsed values. Throws
 * MissingEnvironmentVariableError naming every unset variable a value refers to (references
 * in comments are ignored), or the YAML parser's first error.
 */
export function parseYamlWithEnv(text: string, env: NodeJS.ProcessEnv): unknown {
  const nonce = randomBytes(6).toString('hex');
  const tokenPrefix = `agentgwenv${nonce}x`;
  // Token → the reference's value (undefined: unset, reported only if a value uses it), or a literal "${".
  const values: Array<{ value: string | undefined; name: string }> = [];
  const tokenized = text.replace(REFERENCE, (whole, name: string | undefined, fallback: string | undefined) => {
    values.push(whole === '$${' ? { value: '${', name: '' } : { value: referenceValue(name!, fallback, env), name: name! });
    return `${tokenPrefix}${values.length - 1}x`;
  });
  const document: Document = parseDocument(tokenized);
  if (document.errors.length > 0) throw document.errors[0]!;
  if (values.length === 0) return document.toJS();

  const tokens = new RegExp(`${tokenPrefix}(\\d+)x`, 'g');
  const wholeToken = new RegExp(`^${tokenPrefix}(\\d+)x$`);
  const missing = new Set<string>();
  const resolve = (index: string): string => {
    const entry = values[Number(index)]!;
    if (entry.value === undefined) {
      missing.add(entry.name);
      return '';
    }
    return entry.value;
  };
  visit(document, {
    Scalar(_key, node: Scalar) {
      if (typeof node.value !== 'string' || !node.value.includes(tokenPrefix)) return;
      const whole = node.type === 'PLAIN' ? wholeToken.exec(node.value) : null;
      if (whole && values[Number(whole[1])]!.name !== '') {
        node.value = asPlainScalar(resolve(whole[1]!));
        return;
      }
      node.value = node.value.replace(tokens, (_token, index: string) => resolve(index));
    },
  });
  if (missing.size > 0) throw new MissingEnvironmentVariableError([...missing]);
  return document.toJS();
}
