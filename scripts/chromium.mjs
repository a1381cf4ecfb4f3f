// Debian's Chromium driven by playwright-core: the one browser launch the dashboard's
// end-to-end tests and `npm run screenshots` share. A fresh profile per launch (deleted at
// close), no network traffic of the browser's own (updates, sync, QUIC probes), headless.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

/** CHROMIUM_PATH overrides; `.ci/run` installs Debian's package when it is missing. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * A browser context on a fresh profile. Throws (never skips) when Chromium is missing, so a
 * machine without it fails the tests that need it, saying how to fix it.
 */
export async function launchChromium(options = {}) {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM_PATH}: run \`apt-get install -y chromium\` (.ci/run does), or set CHROMIUM_PATH`);
  }
  const profile = await mkdtemp(join(tmpdir(), 'agentgw-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: options.viewport ?? { width: 1280, height: 800 },
    deviceScaleFactor: options.deviceScaleFactor ?? 1,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
