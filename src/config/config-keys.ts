// Unknown keys in a config document: which keys the schema knows at a path (read from the zod
// schema itself, so the list cannot drift from it) and the known key nearest a mistyped one,
// for "did you mean" hints in `config check` and at startup.

/** The parts of a zod 4 schema definition this walk reads. */
interface SchemaDef {
  type: string;
  in?: unknown;
  innerType?: unknown;
  shape?: Record<string, unknown>;
  valueType?: unknown;
  element?: unknown;
  options?: unknown[];
}

function defOf(schema: unknown): SchemaDef | undefined {
  return (schema as { _zod?: { def?: SchemaDef } } | undefined)?._zod?.def;
}

/** The object and union members a schema stands for, through optional/default/pipe wrappers. */
function objectsIn(schema: unknown, depth = 0): SchemaDef[] {
  const def = defOf(schema);
  if (!def || depth > 32) return [];
  switch (def.type) {
    case 'object':
      return [def];
    case 'pipe':
      return objectsIn(def.in, depth + 1);
    case 'union':
      return (def.options ?? []).flatMap((option) => objectsIn(option, depth + 1));
    default:
      return def.innerType === undefined ? [] : objectsIn(def.innerType, depth + 1);
  }
}

/** The schema of the value at `segment` below `schema` (record keys and array indexes pass through). */
function childSchemas(schema: unknown, segment: PropertyKey, depth = 0): unknown[] {
  const def = defOf(schema);
  if (!def || depth > 32) return [];
  switch (def.type) {
    case 'object':
      return def.shape && typeof segment === 'string' && segment in def.shape ? [def.shape[segment]] : [];
    case 'record':
      return [def.valueType];
    case 'array':
      return typeof segment === 'number' ? [def.element] : [];
    case 'pipe':
      return childSchemas(def.in, segment, depth + 1);
    case 'union':
      return (def.options ?? []).flatMap((option) => childSchemas(option, segment, depth + 1));
    default:
      return def.innerType === undefined ? [] : childSchemas(def.innerType, segment, depth + 1);
  }
}

/** The keys the mapping at `path` may hold, per the schema; empty when the path is not a mapping it describes. */
export function knownKeysAt(schema: unknown, path: readonly PropertyKey[]): string[] {
  let current = [schema];
  for (const segment of path) current = current.flatMap((s) => childSchemas(s, segment));
  return [...new Set(current.flatMap(objectsIn).flatMap((def) => Object.keys(def.shape ?? {})))];
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The known key nearest `key`, if it is near enough to be a typo: within one edit for short
 * keys, two from five characters on, a third of the length beyond that (case and "-" for "_"
 * ignored). Ties go to the first in `known` (the schema's order).
 */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  const normal = (text: string) => text.toLowerCase().replaceAll('-', '_');
  const allowed = key.length < 5 ? 1 : Math.max(2, Math.floor(key.length / 3));
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(normal(key), normal(candidate));
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
}
