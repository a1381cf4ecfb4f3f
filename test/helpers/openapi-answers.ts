// Every answer a test receives from a gateway started by the shared helpers is checked
// against the OpenAPI documents (openapi/agent-chat.yaml for the public listener,
// openapi/admin.yaml for the admin listener): startTestGateway and startGatewayProcess
// register their listeners here, and the process's fetch is wrapped once so that any fetch
// to a registered listener — postChat, the admin API calls, a test's own fetch — has its
// status, documented headers and JSON body validated before the test sees it. A mismatch
// rejects that fetch, failing the test where the answer came. An event stream is checked by
// status, headers and content type (its body is the test's to read). A path the document
// does not describe is checked only as the error envelope when it answers a JSON error.
import { OpenApiCheck, type CheckedAnswer, type OpenApiName } from './openapi-check.js';

interface Registry {
  /** Origin → the document its answers follow (the object identifies one registration). */
  listeners: Map<string, { name: OpenApiName }>;
  originalFetch: typeof fetch;
}

const state = globalThis as { __agentgwOpenApiAnswers?: Registry };

/** Checks every answer from `baseUrl`'s origin against the named document until `unregister`. */
export function checkAnswersFrom(baseUrl: string, name: OpenApiName): () => void {
  const registry = install();
  OpenApiCheck.for(name); // compiles its validators now, not during the test's first request
  const origin = new URL(baseUrl).origin;
  const entry = { name };
  registry.listeners.set(origin, entry);
  return () => {
    // A restarted gateway may have registered the same origin since: only remove our own entry.
    if (registry.listeners.get(origin) === entry) registry.listeners.delete(origin);
  };
}

function install(): Registry {
  if (state.__agentgwOpenApiAnswers) return state.__agentgwOpenApiAnswers;
  const registry: Registry = { listeners: new Map(), originalFetch: globalThis.fetch };
  state.__agentgwOpenApiAnswers = registry;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await registry.originalFetch(input, init);
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const name = registry.listeners.get(url.origin)?.name;
    if (name === undefined) return response;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    await checkResponse(OpenApiCheck.for(name), method, url.pathname, response);
    return response;
  };
  return registry;
}

async function checkResponse(doc: OpenApiCheck, method: string, path: string, response: Response): Promise<void> {
  const contentType = response.headers.get('content-type') ?? '';
  let text = '';
  let body: unknown = '';
  if (contentType.startsWith('application/json') && method !== 'HEAD') {
    try {
      text = await response.clone().text();
    } catch {
      // The test aborted the request while the body came: nothing complete to check.
      return;
    }
    try {
      body = text === '' ? '' : JSON.parse(text);
    } catch {
      throw new Error(`${method} ${path} ${response.status}: the answer says application/json but is not JSON: ${text.slice(0, 200)}`);
    }
  }
  const answer: CheckedAnswer = { status: response.status, headers: response.headers, body, text };
  if (doc.documents(path)) doc.check(method, path, answer);
  else doc.checkUndocumented(method, path, answer);
}
