// The OpenTelemetry semantic conventions' registry as @opentelemetry/semantic-conventions
// ships it: every attribute and event name the package exports (its `ATTR_*` and `EVENT_*`
// constants, from the stable entry point and the incubating one), and which of them its
// declarations mark `@deprecated`. The tests judge the names the gateway exports by it: a name
// the package does not know, or one it deprecates, is a problem unless it is the gateway's own
// (`agentgw.`-prefixed).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as stable from '@opentelemetry/semantic-conventions';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';

/** The prefix of the names that are the gateway's own, outside the conventions. */
export const OWN_PREFIX = 'agentgw.';

export interface SemconvRegistry {
  readonly attributes: ReadonlySet<string>;
  readonly events: ReadonlySet<string>;
  /**
   * Attribute and event names the package's declarations mark `@deprecated`, with the reason
   * (`Replaced by \`rpc.system.name\`.`). Not those "Moved to the OpenTelemetry GenAI semantic
   * conventions repository": 1.45 marks every `gen_ai.*` name so, and the name stands there.
   */
  readonly deprecated: ReadonlyMap<string, string>;
  /** The package's own version, for messages. */
  readonly version: string;
}

function namesWithPrefix(prefix: string): Set<string> {
  const names = new Set<string>();
  for (const entry of [stable, incubating] as Record<string, unknown>[]) {
    for (const [constant, value] of Object.entries(entry)) if (constant.startsWith(prefix) && typeof value === 'string') names.add(value);
  }
  return names;
}

/** `declare const ATTR_X: "name";` preceded by a doc comment holding `@deprecated`. */
const DECLARATION = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*declare const (?:ATTR|EVENT)_\w+: "([^"]+)";/g;

const DEPRECATED = /@deprecated ([^\n]*)/;
const MOVED = /^Moved to the \[OpenTelemetry GenAI semantic conventions repository\]/;

function deprecatedNames(distDir: string): Map<string, string> {
  const names = new Map<string, string>();
  for (const file of ['stable_attributes.d.mts', 'experimental_attributes.d.mts', 'stable_events.d.mts', 'experimental_events.d.mts']) {
    const text = readFileSync(join(distDir, file), 'utf8');
    for (const match of text.matchAll(DECLARATION)) {
      const reason = DEPRECATED.exec(match[1]!)?.[1]?.trim();
      if (reason !== undefined && !MOVED.test(reason)) names.set(match[2]!, reason);
    }
  }
  return names;
}

export function loadSemconvRegistry(): SemconvRegistry {
  const require = createRequire(import.meta.url);
  const distDir = dirname(require.resolve('@opentelemetry/semantic-conventions'));
  const manifest = JSON.parse(readFileSync(join(distDir, '..', 'package.json'), 'utf8')) as { version: string };
  const registry = { attributes: namesWithPrefix('ATTR_'), events: namesWithPrefix('EVENT_'), deprecated: deprecatedNames(distDir), version: manifest.version };
  // A registry read wrongly (an empty set, a parse that found nothing) would pass every name.
  if (registry.attributes.size < 500 || registry.events.size < 5 || registry.deprecated.size < 50) throw new Error(`the semantic-conventions registry read too small: ${registry.attributes.size} attributes, ${registry.events.size} events, ${registry.deprecated.size} deprecated`);
  return registry;
}

/** What is wrong with these exported names: unknown to the registry, or deprecated by it; [] when all are right. */
export function conventionProblems(registry: SemconvRegistry, names: { attributes?: Iterable<string>; events?: Iterable<string> }): string[] {
  const problems: string[] = [];
  const judge = (name: string, known: ReadonlySet<string>, kind: string): void => {
    if (name.startsWith(OWN_PREFIX)) return;
    if (!known.has(name)) problems.push(`${kind} ${name} is not in the semantic conventions ${registry.version} and not ${OWN_PREFIX}-prefixed`);
    else if (registry.deprecated.has(name)) problems.push(`${kind} ${name} is deprecated in the semantic conventions ${registry.version}: ${registry.deprecated.get(name)}`);
  };
  for (const name of names.attributes ?? []) judge(name, registry.attributes, 'attribute');
  for (const name of names.events ?? []) judge(name, registry.events, 'event');
  return problems;
}
