// undici's Pool and Client, required from their own files instead of the package's index. The
// index also loads fetch, WebSocket, the caches and the mock agents, and its WebSocket code
// makes Node load the copy of undici bundled inside it: heap in every gateway process that
// these two classes do not need (docs/decisions/0028-worker-runtime-memory.md has the figures).
// `Dispatcher.prototype` gets the request API (client.request(), used by the health checks)
// exactly as the index gives it. Types still come from `import type … from 'undici'`.
// Internal paths are not undici's public API: package.json pins undici with `~` (patch releases
// only) and test/unit/proxy/undici-classes.test.ts fails an upgrade that moves or changes them.
import { createRequire } from 'node:module';
import type { Client as ClientClass, Dispatcher as DispatcherClass, Pool as PoolClass } from 'undici';

const require = createRequire(import.meta.url);
const DispatcherBase = require('undici/lib/dispatcher/dispatcher.js') as typeof DispatcherClass;
Object.assign(DispatcherBase.prototype, require('undici/lib/api/index.js') as object);

export const Pool = require('undici/lib/dispatcher/pool.js') as typeof PoolClass;
export type Pool = PoolClass;
export const Client = require('undici/lib/dispatcher/client.js') as typeof ClientClass;
export type Client = ClientClass;
