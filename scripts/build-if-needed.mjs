// Builds dist/ when it is missing or older than any file under src/, so `npm start`
// and `npm test` work from a fresh clone without a separate build step.
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

const marker = 'dist/cli/main.js';
const stale = !existsSync(marker) || statSync(marker).mtimeMs < Math.max(newestMtimeMs('src'), statSync('tsconfig.build.json').mtimeMs);
if (stale) {
  process.stderr.write('agent-gateway: building dist/ ...\n');
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
