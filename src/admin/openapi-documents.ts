// The OpenAPI 3.1 documents (openapi/*.yaml in the package) served as JSON by the admin
// listener at /openapi/agent-chat.json and /openapi/admin.json. Read and converted once, on
// first request.
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';

export const OPENAPI_DOCUMENTS = { 'agent-chat.json': 'agent-chat.yaml', 'admin.json': 'admin.yaml' } as const;
export type OpenApiDocumentName = keyof typeof OPENAPI_DOCUMENTS;

/** src/admin/ and dist/admin/ both sit two levels below the package root. */
const OPENAPI_DIR = new URL('../../openapi/', import.meta.url);

const cache = new Map<OpenApiDocumentName, Promise<string>>();

export function isOpenApiDocumentName(name: string): name is OpenApiDocumentName {
  return Object.hasOwn(OPENAPI_DOCUMENTS, name);
}

/** The document as JSON text. */
export function openApiJson(name: OpenApiDocumentName): Promise<string> {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFile(new URL(OPENAPI_DOCUMENTS[name], OPENAPI_DIR), 'utf8').then((yaml) => `${JSON.stringify(parseYaml(yaml))}\n`);
    // A failed read is retried on the next request rather than cached.
    text.catch(() => cache.delete(name));
    cache.set(name, text);
  }
  return text;
}
