// Builds what is missing or older than its sources, so `npm start` and `npm test` work from a
// fresh clone without a separate build step: dist/ from src/ (tsc), and dist/dashboard/ from
// web/ (vite). An unsupported Node.js is refused first, before anything is built.
import './node-guard.mjs';
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';

function newestMtimeMs(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestMtimeMs(path) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

function isStale(marker, sources) {
  return !existsSync(marker) || statSync(marker).mtimeMs < Math.max(...sources.map((s) => (statSync(s).isDirectory() ? newestMtimeMs(s) : statSync(s).mtimeMs)));
}

if (isStale('dist/cli/main.js', ['src', 'tsconfig.build.json'])) {
  process.stderr.write('agent-gateway: building dist/ ...\n');
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
// Vite empties dist/dashboard/ and writes index.html last, so its time marks a whole build.
if (isStale('dist/dashboard/index.html', ['web', 'package-lock.json'])) {
  process.stderr.write('agent-gateway: building the dashboard (dist/dashboard/) ...\n');
  execFileSync(process.execPath, ['node_modules/vite/bin/vite.js', 'build', '--config', 'web/vite.config.ts'], { stdio: 'inherit' });
}
