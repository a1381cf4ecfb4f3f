// Every Redis script of src/ is a typed, versioned operation (src/redis/redis-operation.ts,
// docs/design.md "Redis operations"): a versioned name that its reply is tagged with, scripts
// registered only through defineOperation, and decoders that read replies by the layout's
// names, never by a number written by hand. The last two are read from the source with the
// TypeScript parser, so a new file is checked as soon as it exists.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { AUDIT_OPERATIONS } from '../../../src/audit/audit-stream-operations.js';
import { KEY_OPERATIONS } from '../../../src/keys/redis-key-operations.js';
import { LIMITER_OPERATIONS } from '../../../src/ratelimit/protocol/limiter-operations.js';
import { OUTBOX_OPERATIONS } from '../../../src/notifications/outbox-protocol.js';
import { sessionEnd } from '../../../src/mcp/mcp-session-end.js';
import { sessionSwap } from '../../../src/mcp/mcp-session-swap.js';
import { defineOperation, VERSIONED_OPERATION_NAME, type AnyRedisOperation } from '../../../src/redis/redis-operation.js';
import type { RedisClient } from '../../../src/redis/redis-client.js';

const ROOT = join(import.meta.dirname, '../../..');
const SRC = join(ROOT, 'src');
let parsed: ts.SourceFile[] | undefined;
/** src/, parsed once for the tests that read it. */
const SOURCES = (): ts.SourceFile[] => (parsed ??= sourceFiles(SRC).map((path) => parse(path)));
const ALL: readonly AnyRedisOperation[] = [...LIMITER_OPERATIONS, ...KEY_OPERATIONS, ...AUDIT_OPERATIONS, ...OUTBOX_OPERATIONS, sessionSwap, sessionEnd];

/**
 * Scripts still registered by name outside defineOperation, with why. The webhook outbox is
 * being restructured (and its scripts named and versioned) in a change of its own; the test
 * below fails once an entry no longer applies, so the list cannot outlive its reason.
 */
const PENDING: Record<string, string> = {};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function parse(path: string, text = readFileSync(path, 'utf8')): ts.SourceFile {
  return ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true);
}

function lineOf(file: ts.SourceFile, node: ts.Node): string {
  return `${relative(ROOT, file.fileName)}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}`;
}

function walk(node: ts.Node, visit: (node: ts.Node) => void): void {
  visit(node);
  node.forEachChild((child) => walk(child, visit));
}

/** `x[3]`, `x[i + 1]`: an index that is, or is offset by, a number written by hand. */
function isNumericIndex(node: ts.Node): boolean {
  if (!ts.isElementAccessExpression(node)) return false;
  let index = node.argumentExpression;
  while (ts.isParenthesizedExpression(index)) index = index.expression;
  if (ts.isNumericLiteral(index)) return true;
  return ts.isBinaryExpression(index) && (ts.isNumericLiteral(index.left) || ts.isNumericLiteral(index.right));
}

type FunctionBody = ts.FunctionLikeDeclaration;

function functionName(node: ts.Node): string | undefined {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name !== undefined) return node.name.getText();
  if ((ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && (ts.isVariableDeclaration(node.parent) || ts.isPropertyAssignment(node.parent))) return node.parent.name.getText();
  return undefined;
}

/** A file that speaks to Redis: by its name or folder, or by what it contains. */
function speaksRedis(file: ts.SourceFile): boolean {
  return /redis|protocol|lua/i.test(relative(ROOT, file.fileName)) || /redis\.p?call\(|redis-operation\.js|defineCommand\(|from 'ioredis'/.test(file.text);
}

/** The file's top-level functions by name, and the relative imports it names (local name → the .ts file). */
function declarations(file: ts.SourceFile): { functions: Map<string, FunctionBody>; imports: Map<string, { path: string; name: string }> } {
  const functions = new Map<string, FunctionBody>();
  const imports = new Map<string, { path: string; name: string }>();
  for (const statement of file.statements) {
    if (ts.isFunctionDeclaration(statement) && statement.name !== undefined && statement.body !== undefined) functions.set(statement.name.text, statement);
    if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        const init = declaration.initializer;
        if (init !== undefined && ts.isIdentifier(declaration.name) && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))) functions.set(declaration.name.text, init);
      }
    }
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier) && statement.moduleSpecifier.text.startsWith('.')) {
      const path = join(dirname(file.fileName), statement.moduleSpecifier.text.replace(/\.js$/, '.ts'));
      const bindings = statement.importClause?.namedBindings;
      if (bindings !== undefined && ts.isNamedImports(bindings)) for (const element of bindings.elements) imports.set(element.name.text, { path, name: (element.propertyName ?? element.name).text });
    }
  }
  return { functions, imports };
}

/**
 * Positional reads inside the decoders of the given files: every function named decode* (an
 * operation's `decode` too) in a file that speaks to Redis, and every function it calls,
 * resolved through the file's own top-level functions and its relative imports, transitively.
 */
export function positionalReplyReads(files: readonly ts.SourceFile[]): string[] {
  const byPath = new Map(files.map((file) => [file.fileName, { file, ...declarations(file) }]));
  const queue: Array<{ file: ts.SourceFile; body: FunctionBody }> = [];
  for (const file of files) {
    if (!speaksRedis(file)) continue;
    walk(file, (node) => {
      const name = ts.isFunctionLike(node) && 'body' in node && node.body !== undefined ? functionName(node) : undefined;
      if (name !== undefined && /^decode/.test(name)) queue.push({ file, body: node as FunctionBody });
    });
  }
  const found = new Set<string>();
  const seen = new Set<ts.Node>();
  while (queue.length > 0) {
    const { file, body } = queue.pop()!;
    if (seen.has(body)) continue;
    seen.add(body);
    const scope = byPath.get(file.fileName)!;
    walk(body, (node) => {
      if (isNumericIndex(node) || ts.isArrayBindingPattern(node)) found.add(`${lineOf(file, node)} ${node.getText(file)}`);
      if (!ts.isCallExpression(node) || !ts.isIdentifier(node.expression)) return;
      const called = node.expression.text;
      const local = scope.functions.get(called);
      if (local !== undefined) queue.push({ file, body: local });
      const imported = scope.imports.get(called);
      const from = imported === undefined ? undefined : byPath.get(imported.path);
      const target = from?.functions.get(imported!.name);
      if (from !== undefined && target !== undefined) queue.push({ file: from.file, body: target });
    });
  }
  return [...found].sort();
}

/** `defineCommand(...)` calls outside defineOperation whose name is not a versioned literal, by file. */
function unversionedRegistrations(files: readonly ts.SourceFile[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const file of files) {
    const path = relative(ROOT, file.fileName);
    if (path === 'src/redis/redis-operation.ts') continue;
    walk(file, (node) => {
      if (!ts.isCallExpression(node) || !ts.isPropertyAccessExpression(node.expression)) return;
      const method = node.expression.name.text;
      const [name] = node.arguments;
      const versionedLiteral = name !== undefined && ts.isStringLiteral(name) && VERSIONED_OPERATION_NAME.test(name.text);
      if ((method === 'defineCommand' && !versionedLiteral) || method === 'eval' || method === 'evalsha') {
        (out[path] ??= []).push(`${lineOf(file, node)} ${node.getText(file).slice(0, 60)}`);
      }
    });
  }
  return out;
}

describe('Redis operations', () => {
  it('each has a versioned name, unique, that its script tags every reply with', () => {
    expect(ALL.length).toBeGreaterThan(10);
    for (const operation of ALL) {
      expect(operation.name).toMatch(VERSIONED_OPERATION_NAME);
      expect(operation.source).toContain(`'${operation.name}'`);
    }
    expect(new Set(ALL.map((operation) => operation.name)).size).toBe(ALL.length);
  });

  it('defineOperation refuses a name without a version', () => {
    const defined: string[] = [];
    const client = { defineCommand: (name: string) => defined.push(name) } as unknown as RedisClient;
    expect(() => defineOperation(client, { ...ALL[0]!, name: 'agentgwKeyCreate' })).toThrow(/has no version/);
    defineOperation(client, ALL[0]!);
    expect(defined).toEqual([ALL[0]!.name]);
  });

  it('every script in src/ is registered through defineOperation or under a versioned name; never EVAL by hand', () => {
    const offenders = unversionedRegistrations(SOURCES());
    // Each pending entry still applies (remove it once its file is done), and nothing else offends.
    expect(Object.keys(offenders).sort()).toEqual(Object.keys(PENDING).sort());
  });

  it('no decoder in src/ reads a reply by a numeric index or by position (destructuring)', () => {
    expect(positionalReplyReads(SOURCES())).toEqual([]);
  });

  it('the scan finds a positional read where there is one, also in a helper a decoder calls', () => {
    const helper = parse(join(SRC, 'redis/helper.ts'), `export function tagOf(reply: unknown[]) { return reply[0]; }\nexport function unused(reply: unknown[]) { return reply[1]; }`);
    const file = parse(
      join(SRC, 'redis/example.ts'),
      `import { tagOf } from './helper.js';
       function at(reply: unknown[]) { return reply[9 - 0]; }
       export function decodeThing(reply: unknown[]) { const [tag] = reply; return { tag, cost: at(reply), next: reply[i + 1], named: reply[AT.cost], first: tagOf(reply) }; }
       export function unrelated(list: number[]) { return list[0]; }`,
    );
    expect(positionalReplyReads([file, helper])).toEqual(['src/redis/example.ts:2 reply[9 - 0]', 'src/redis/example.ts:3 [tag]', 'src/redis/example.ts:3 reply[i + 1]', 'src/redis/helper.ts:1 reply[0]']);
  });
});
