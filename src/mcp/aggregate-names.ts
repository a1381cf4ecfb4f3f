// The names of the aggregated endpoint `/mcp` (docs/mcp.md "The aggregated endpoint"): a tool or
// prompt of server `files` named `read` is `files__read` there. Server names cannot hold `__`
// (config/mcp-schema.ts), so the FIRST `__` splits a name: `a__b__c` is tool `b__c` of server
// `a`. The same spelling the `tool_calls` quotas use (`{server}__{tool}`), so a call through
// `/mcp` and through `/mcp/{server}` is one name in the limits.

export interface QualifiedName {
  server: string;
  name: string;
}

const SEPARATOR = '__';

/** `{server}__{name}` split at its first `__`; undefined when either side is empty or there is none. */
export function splitQualifiedName(qualified: string): QualifiedName | undefined {
  const at = qualified.indexOf(SEPARATOR);
  if (at <= 0) return undefined;
  const name = qualified.slice(at + SEPARATOR.length);
  if (name === '') return undefined;
  return { server: qualified.slice(0, at), name };
}

export function qualifiedName(server: string, name: string): string {
  return `${server}${SEPARATOR}${name}`;
}
