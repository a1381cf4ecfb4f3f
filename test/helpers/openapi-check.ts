// Checks HTTP answers against the repo's OpenAPI documents (openapi/*.yaml), so the
// documents cannot drift from what the gateway does: the status must be documented for the
// operation, the content type must be one the document lists, and the body (JSON) and
// documented headers must validate against their schemas (ajv, JSON Schema 2020-12 as
// OpenAPI 3.1 uses it).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse as parseYaml } from 'yaml';

type Json = Record<string, unknown>;

/**
 * The header the test runners (fake-upstream.ts) put on every answer: the gateway passes a
 * runner's answer through with it, so the check knows the status and body are the runner's.
 */
export const RUNNER_MARKER = 'x-test-runner';

export type OpenApiName = 'admin' | 'agent-chat';

export interface CheckedAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON for JSON answers, else the text. */
  body: unknown;
  text: string;
}

const pointerPart = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

export class OpenApiCheck {
  readonly document: Json;
  private readonly ajv: Ajv2020;
  private readonly id: string;
  /** "METHOD template status" of every answer checked, for coverage assertions. */
  readonly seen = new Set<string>();

  constructor(readonly name: OpenApiName) {
    this.document = parseYaml(readFileSync(join(process.cwd(), 'openapi', `${name}.yaml`), 'utf8')) as Json;
    this.id = `https://agent-gateway.test/${name}.json`;
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (ajv: Ajv2020) => void)(this.ajv);
    this.ajv.addSchema({ ...this.document, $id: this.id });
  }

  private template(path: string): string {
    for (const template of Object.keys(this.document.paths as Json)) {
      const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
      if (pattern.test(path)) return template;
    }
    throw new Error(`${this.name}.yaml documents no path matching ${path}`);
  }

  /** Follows a local $ref; returns the node and its JSON pointer. */
  private resolve(node: Json, pointer: string): [Json, string] {
    while (typeof node.$ref === 'string') {
      pointer = (node.$ref as string).slice(1);
      node = pointer
        .split('/')
        .slice(1)
        .reduce<Json>((at, part) => at[part.replace(/~1/g, '/').replace(/~0/g, '~')] as Json, this.document);
    }
    return [node, pointer];
  }

  private validateAt(pointer: string, value: unknown, what: string): void {
    const validate = this.ajv.getSchema(`${this.id}#${pointer}`);
    if (!validate) throw new Error(`no schema at ${pointer}`);
    if (!validate(value)) throw new Error(`${what} does not match ${this.name}.yaml ${pointer}: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
  }

  /**
   * One checker per document and process, its ajv validators all compiled up front: compiling
   * on first use would stall a test's first request by the compile time (under load, long
   * enough to push a timed sequence of requests across a rate-limit window).
   */
  static for(name: OpenApiName): OpenApiCheck {
    const cache = ((globalThis as { __agentgwOpenApiChecks?: Map<OpenApiName, OpenApiCheck> }).__agentgwOpenApiChecks ??= new Map());
    let check = cache.get(name);
    if (check === undefined) {
      cache.set(name, (check = new OpenApiCheck(name)));
      check.compileAll();
    }
    return check;
  }

  /** Compiles the validator of every response body and header the document describes. */
  compileAll(): void {
    this.ajv.getSchema(`${this.id}#/components/schemas/Error`);
    for (const [template, item] of Object.entries(this.document.paths as Record<string, Json>)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'parameters') continue;
        for (const [status, ref] of Object.entries(((operation as Json).responses ?? {}) as Json)) {
          const [response, pointer] = this.resolve(ref as Json, `/paths/${pointerPart(template)}/${method}/responses/${status}`);
          if ((response.content as Json | undefined)?.['application/json']) this.ajv.getSchema(`${this.id}#${pointer}/content/application~1json/schema`);
          for (const [header, headerRef] of Object.entries((response.headers ?? {}) as Json)) {
            const [resolved, headerPointer] = this.resolve(headerRef as Json, `${pointer}/headers/${pointerPart(header)}`);
            if (resolved.schema) this.ajv.getSchema(`${this.id}#${headerPointer}/schema`);
          }
        }
      }
    }
  }

  /** Whether the document has an operation for this path (any method). */
  documents(path: string): boolean {
    try {
      this.template(path);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * An answer on a path the document does not describe (a probe of an unknown route, the
   * listener's own endpoints such as /readyz): a 404 or 405 in JSON is the gateway saying
   * "no such route", so it must be its error envelope, as the document's Error schema says.
   */
  checkUndocumented(method: string, path: string, answer: CheckedAnswer): void {
    const mediaType = (answer.headers.get('content-type') ?? '').split(';')[0]!.trim();
    if ((answer.status === 404 || answer.status === 405) && mediaType === 'application/json') this.validateAt('/components/schemas/Error', answer.body, `${method} ${path} ${answer.status} body`);
  }

  /** Throws unless the answer is documented and valid. */
  check(method: string, path: string, answer: CheckedAnswer): void {
    const template = this.template(path);
    const item = (this.document.paths as Record<string, Json>)[template]!;
    let operationMethod = method.toLowerCase();
    // A method the path does not have answers 405, which each documented operation lists.
    if (!(operationMethod in item) && answer.status === 405) operationMethod = Object.keys(item).find((m) => m !== 'parameters')!;
    const operationPointer = `/paths/${pointerPart(template)}/${operationMethod}`;
    const operation = item[operationMethod] as Json | undefined;
    if (!operation) throw new Error(`${this.name}.yaml documents no ${method} ${template}`);
    const responses = operation.responses as Json;
    // A runner's answer passed through (the fake runners mark theirs): a 200 is the documented
    // 200, any other status the `default` (RunnerAnswer); its headers are checked, its body is the runner's.
    const fromRunner = this.name === 'agent-chat' && answer.headers.get(RUNNER_MARKER) !== null;
    const key = fromRunner && answer.status !== 200 ? 'default' : String(answer.status);
    if (!(key in responses)) throw new Error(`${this.name}.yaml: ${method} ${template} does not document status ${answer.status}: ${answer.text.slice(0, 300)}`);
    const [response, responsePointer] = this.resolve(responses[key] as Json, `${operationPointer}/responses/${key}`);
    for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
      const value = answer.headers.get(name);
      const [resolved, headerPointer] = this.resolve(header as Json, `${responsePointer}/headers/${pointerPart(name)}`);
      if (value === null) {
        if (resolved.required === true) throw new Error(`${method} ${template} ${answer.status}: the required header ${name} is missing`);
        continue;
      }
      if (resolved.schema) this.validateAt(`${headerPointer}/schema`, value, `header ${name}`);
    }
    const content = response.content as Json | undefined;
    if (content && !(fromRunner && key === 'default')) {
      const mediaType = (answer.headers.get('content-type') ?? '').split(';')[0]!.trim();
      if (!(mediaType in content)) throw new Error(`${method} ${template} ${answer.status}: content type ${mediaType} is not documented (${Object.keys(content).join(', ')})`);
      if (mediaType === 'application/json' && !fromRunner) this.validateAt(`${responsePointer}/content/${pointerPart(mediaType)}/schema`, answer.body, `${method} ${path} ${answer.status} body`);
    }
    this.seen.add(`${method} ${template} ${answer.status}`);
  }

  /** fetch, then check the answer (JSON read in full; an event stream read to its end). */
  async fetch(url: string, init: RequestInit = {}): Promise<CheckedAnswer> {
    const response = await fetch(url, init);
    const text = await response.text();
    const isJson = (response.headers.get('content-type') ?? '').startsWith('application/json');
    const answer: CheckedAnswer = { status: response.status, headers: response.headers, body: isJson && text !== '' ? JSON.parse(text) : text, text };
    this.check(init.method ?? 'GET', new URL(url).pathname, answer);
    return answer;
  }
}
