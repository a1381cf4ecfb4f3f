// Reads, substitutes, parses and validates the YAML config; errors name the key and what is allowed.
import { readFile } from 'node:fs/promises';
import { YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { knownKeysAt, nearestKey } from './config-keys.js';
import { parseYamlWithEnv } from './env-substitution.js';
import { configSchema, type GatewayConfig } from './schema.js';
import { telemetryWithEnv } from './telemetry-schema.js';
import { DEFAULT_CONFIG_PATH } from './default-config-path.js';

export { DEFAULT_CONFIG_PATH };

export class ConfigError extends Error {
  constructor(readonly source: string, readonly problems: string[]) {
    super(`invalid config ${source}${problems.length > 1 ? ` (${problems.length} problems)` : ''}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** The config file is not there: one line naming it and what to do, not a list of problems or an errno. */
export class ConfigFileMissingError extends ConfigError {
  constructor(source: string) {
    super(source, ['no such file']);
    this.message = `no config file at ${source}: pass --config PATH, or run from the checkout's root, where ${DEFAULT_CONFIG_PATH} is (docs/configuration.md)`;
    this.name = 'ConfigFileMissingError';
  }
}

const pathText = (path: readonly PropertyKey[]) => (path.length > 0 ? path.map(String).join('.') : '(top level)');

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = pathText(issue.path);
  if (issue.code === 'invalid_key' && issue.issues.length > 0) {
    return `${path}: ${issue.issues.map((inner) => inner.message).join('; ')}`;
  }
  return `${path}: ${issue.message}`;
}

/** One line per unknown key, with the known key nearest it when it looks like a typo of one. */
function describeUnknownKeys(path: readonly PropertyKey[], keys: readonly string[]): string[] {
  const known = knownKeysAt(configSchema, path);
  return keys.map((key) => {
    const near = nearestKey(key, known);
    return `${pathText(path)}: unknown key "${key}"${near === undefined ? '' : ` (did you mean "${near}"?)`}`;
  });
}

/** `document` with `keys` removed from the mapping at `path` (copied along the path, never changed in place). */
function withoutKeys(document: unknown, path: readonly PropertyKey[], keys: readonly string[]): unknown {
  if (document === null || typeof document !== 'object') return document;
  const copy = (Array.isArray(document) ? [...(document as unknown[])] : { ...(document as Record<string, unknown>) }) as Record<string, unknown>;
  if (path.length === 0) {
    for (const key of keys) delete copy[key];
  } else {
    const at = String(path[0]);
    copy[at] = withoutKeys(copy[at], path.slice(1), keys);
  }
  return copy;
}

/** Unknown keys are set aside this many times at most (each pass removes all it found). */
const MAX_PASSES = 8;

/**
 * Validates a document, reporting every problem at once. An unknown key makes zod skip the
 * checks of the mapping holding it and of every mapping above it (its issue aborts them), so
 * reporting zod's issues as they come showed mistakes in rounds. Instead the unknown keys are
 * reported (with the nearest known key) and set aside, and the rest is validated again.
 */
function validate(raw: Record<string, unknown>): { config: GatewayConfig; problems: [] } | { config?: undefined; problems: string[] } {
  const unknown: string[] = [];
  let document: unknown = raw;
  for (let pass = 1; ; pass++) {
    const result = configSchema.safeParse(document);
    if (result.success) return unknown.length === 0 ? { config: result.data, problems: [] } : { problems: unknown };
    const keyIssues = result.error.issues.filter((issue) => issue.code === 'unrecognized_keys');
    if (keyIssues.length === 0 || pass === MAX_PASSES) return { problems: [...unknown, ...result.error.issues.map((issue) => (issue.code === 'unrecognized_keys' ? describeUnknownKeys(issue.path, issue.keys).join('; ') : describeIssue(issue)))] };
    for (const issue of keyIssues) {
      unknown.push(...describeUnknownKeys(issue.path, issue.keys));
      document = withoutKeys(document, issue.path, issue.keys);
    }
  }
}

/** Every problem of an already-parsed YAML document (plus env overrides); empty when it is valid. */
export function configProblems(document: unknown, env: NodeJS.ProcessEnv = process.env): { config?: GatewayConfig; problems: string[] } {
  if (document !== null && document !== undefined && (typeof document !== 'object' || Array.isArray(document))) {
    return { problems: ['the file must be a YAML mapping of keys such as listen, agents, plans'] };
  }
  const raw: Record<string, unknown> = document ? { ...(document as Record<string, unknown>) } : {};
  if (env.PORT) raw.listen = { ...(raw.listen as object | undefined), port: env.PORT };
  if (env.REDIS_URL) raw.redis = { ...(raw.redis as object | undefined), url: env.REDIS_URL };
  // The standard OTEL_* variables fill what the telemetry block leaves unset (telemetry-schema.ts).
  const telemetry = telemetryWithEnv(raw.telemetry, env);
  if (telemetry.problems.length > 0) return { problems: telemetry.problems };
  raw.telemetry = telemetry.block;
  return validate(raw);
}

/** Validates an already-parsed YAML document (plus env overrides) into a GatewayConfig. */
export function parseConfig(document: unknown, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const { config, problems } = configProblems(document, env);
  if (!config) throw new ConfigError(source, problems);
  return config;
}

/** The YAML text as a document, `${ENV}` substituted; a syntax error is a ConfigError. */
export function parseConfigDocument(text: string, source: string, env: NodeJS.ProcessEnv = process.env): unknown {
  try {
    return parseYamlWithEnv(text, env);
  } catch (error) {
    if (error instanceof YAMLParseError) throw new ConfigError(source, [`YAML syntax: ${error.message}`]);
    if (error instanceof Error) throw new ConfigError(source, [error.message]);
    throw error;
  }
}

export function parseConfigText(text: string, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return parseConfig(parseConfigDocument(text, source, env), source, env);
}

/** The config file's text; an unreadable file is a ConfigError. */
export async function readConfigText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ConfigFileMissingError(path);
    throw new ConfigError(path, [`cannot read the file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`]);
  }
}

export async function loadConfig(path: string = DEFAULT_CONFIG_PATH, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  return parseConfigText(await readConfigText(path), path, env);
}
