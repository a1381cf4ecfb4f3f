// A preload for a gateway child process (`node --import <this file> dist/cli/main.js …`) that
// records the URL of every module the process resolves, ESM and CommonJS alike, and writes them
// to `<AGENTGW_LOADED_MODULES_DIR>/<pid>.txt` when the process exits (cluster workers inherit
// the flag and write their own file). It lets a test say which optional subsystems a process
// loaded (test/e2e/optional-subsystems-loaded.test.ts) without asserting on memory or time.
//
// Node 22.15+ and 23.5+ have module.registerHooks: synchronous hooks on this thread, called for
// import and require() alike. Node 22.13 and 22.14 only have module.register, whose hooks run on
// a loader thread: there the URLs come back over a MessagePort (loaded-modules-hooks.mjs), and
// a CommonJS package's own require() calls are not seen, only its entry point — which is all the
// test looks for.
import * as nodeModule from 'node:module';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';

const dir = process.env.AGENTGW_LOADED_MODULES_DIR;
const loaded = new Set();

if (dir) {
  if (typeof nodeModule.registerHooks === 'function') {
    nodeModule.registerHooks({
      resolve(specifier, context, nextResolve) {
        const resolved = nextResolve(specifier, context);
        loaded.add(resolved.url);
        return resolved;
      },
    });
  } else {
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (url) => loaded.add(url));
    // The port must not keep a process alive that would otherwise exit.
    port1.unref();
    nodeModule.register(new URL('./loaded-modules-hooks.mjs', import.meta.url), { data: { port: port2 }, transferList: [port2] });
  }
  process.on('exit', () => writeFileSync(join(dir, `${process.pid}.txt`), [...loaded].join('\n') + '\n'));
}
