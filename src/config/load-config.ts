// Reads, substitutes, parses and validates the YAML config; errors name the key and what is allowed.
import { readFile } from 'node:fs/promises';
import { YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { parseYamlWithEnv } from './env-substitution.js';
import { configSchema, type GatewayConfig } from './schema.js';
import { telemetryWithEnv } from './telemetry-schema.js';

export const DEFAULT_CONFIG_PATH = 'config/gateway.yaml';

export class ConfigError extends Error {
  constructor(readonly source: string, readonly problems: string[]) {
    super(`invalid config ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
  if (issue.code === 'unrecognized_keys') {
    return `${path}: unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  }
  if (issue.code === 'invalid_key' && issue.issues.length > 0) {
    return `${path}: ${issue.issues.map((inner) => inner.message).join('; ')}`;
  }
  return `${path}: ${issue.message}`;
}

/** Validates an already-parsed YAML document (plus env overrides) into a GatewayConfig. */
export function parseConfig(document: unknown, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const raw: Record<string, unknown> = document && typeof document === 'object' && !Array.isArray(document) ? { ...(document as Record<string, unknown>) } : {};
  if (document !== null && document !== undefined && (typeof document !== 'object' || Array.isArray(document))) {
    throw new ConfigError(source, ['the file must be a YAML mapping of keys such as listen, agents, plans']);
  }
  if (env.PORT) raw.listen = { ...(raw.listen as object | undefined), port: env.PORT };
  if (env.REDIS_URL) raw.redis = { ...(raw.redis as object | undefined), url: env.REDIS_URL };
  // The standard OTEL_* variables fill what the telemetry block leaves unset (telemetry-schema.ts).
  const telemetry = telemetryWithEnv(raw.telemetry, env);
  if (telemetry.problems.length > 0) throw new ConfigError(source, telemetry.problems);
  raw.telemetry = telemetry.block;
  const result = configSchema.safeParse(raw);
  if (!result.success) throw new ConfigError(source, result.error.issues.map(describeIssue));
  return result.data;
}

export function parseConfigText(text: string, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let document: unknown;
  try {
    document = parseYamlWithEnv(text, env);
  } catch (error) {
    if (error instanceof YAMLParseError) throw new ConfigError(source, [`YAML syntax: ${error.message}`]);
    if (error instanceof Error) throw new ConfigError(source, [error.message]);
    throw error;
  }
  return parseConfig(document, source, env);
}

export async function loadConfig(path: string = DEFAULT_CONFIG_PATH, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(path, [`cannot read the file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`]);
  }
  return parseConfigText(text, path, env);
}
