// `${NAME}` and `${NAME:-default}` in the raw YAML text are replaced from the environment
// before parsing, so secrets (Redis passwords) stay out of the file. `$${` escapes a literal.
const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export class MissingEnvironmentVariableError extends Error {
  constructor(readonly names: string[]) {
    super(`config refers to unset environment variable(s): ${names.join(', ')} (set them, or write \${NAME:-default})`);
  }
}

export function substituteEnv(text: string, env: NodeJS.ProcessEnv): string {
  const missing: string[] = [];
  const result = text.replace(REFERENCE, (whole, name: string | undefined, fallback: string | undefined) => {
    if (whole === '$${') return '${';
    const value = env[name!];
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    missing.push(name!);
    return '';
  });
  if (missing.length > 0) throw new MissingEnvironmentVariableError([...new Set(missing)]);
  return result;
}
