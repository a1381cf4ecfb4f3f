/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The dashboard's form controls as assistive technology meets them, in the browser: every
// input, select and textarea with a label (or aria-label), every button with a name.
import type { Page } from 'playwright-core';

/** The controls without a label or name (their opening markup, shortened); [] when all have one. */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const missing: string[] = [];
    for (const el of document.querySelectorAll<HTMLInputElement | HTMLSelectElement>('input, select, textarea')) {
      if ((el.labels?.length ?? 0) === 0 && !el.getAttribute('aria-label')) missing.push(el.outerHTML.slice(0, 80));
    }
    for (const el of document.querySelectorAll('button')) if ((el.getAttribute('aria-label') ?? el.textContent ?? '').trim() === '') missing.push(el.outerHTML.slice(0, 80));
    return missing;
  });
}
