#!/usr/bin/env node
// The `agent-gateway` bin (package.json "bin"; `node bin/agent-gateway.mjs …` from a checkout).
// Before the CLI itself (dist/cli/main.js, built from src/) is loaded: an unsupported Node.js
// is refused in one line (scripts/node-guard.mjs), and a checkout that was never built says in
// one line what to run, rather than Node's "Cannot find module" stack trace. Plain JavaScript
// of an old syntax level, like the guard: an old Node must be able to read it to refuse itself.
import '../scripts/node-guard.mjs';
import { existsSync } from 'node:fs';

var main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('agent-gateway: the CLI is not built yet (no dist/cli/main.js): run `npm run build` (or `npm start`, which builds first), then this again.\n');
  process.exit(1);
}
await import(main.href);
