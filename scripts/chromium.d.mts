import type { BrowserContext } from 'playwright-core';

export const CHROMIUM_PATH: string;
export const CHROMIUM_ARGS: string[];
export function launchChromium(options?: { viewport?: { width: number; height: number }; deviceScaleFactor?: number }): Promise<{ context: BrowserContext; close(): Promise<void> }>;
