// node:http, loaded through require. An ESM import of a built-in module evaluates every one of
// its exports, and node:http's include lazy getters (WebSocket, CloseEvent, MessageEvent) that
// load the copy of undici bundled inside Node: heap in every gateway process for classes the
// gateway never uses (docs/decisions/0028-worker-runtime-memory.md has the figure). require()
// reads only the exports named here. Types still come from `import type … from 'node:http'`.
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export const { createServer, ServerResponse, STATUS_CODES } = http;
