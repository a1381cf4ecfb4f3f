/// <reference lib="dom" />
// WCAG 2.x contrast of the text a page shows, measured in the browser from computed styles:
// every visible element with text of its own (and every text field and select, for the
// value it shows) against the background it sits on (its own and its ancestors' background
// colours, alpha-blended down to an opaque one, white under all). Disabled controls are
// exempt, as WCAG 1.4.3 exempts inactive components. Canvas text (the chart's axes) is not
// in the DOM and not measured; the chart's numbers are also in DOM tables, which are.
import type { Page } from 'playwright-core';

/** AA: 4.5:1 for body text, 3:1 for large text (24 px, or 18.66 px bold). */
export async function lowContrastText(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type Rgba = [number, number, number, number];
    const failures: string[] = [];
    const parse = (css: string): Rgba | undefined => {
      const m = /^rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)$/.exec(css);
      return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : undefined;
    };
    const over = (top: Rgba, bottom: Rgba): Rgba => [0, 1, 2].map((i) => top[i]! * top[3] + bottom[i]! * (1 - top[3])).concat(1) as Rgba;
    const luminance = (c: Rgba): number => {
      const [r, g, b] = c.slice(0, 3).map((v) => {
        const s = v / 255;
        return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const describe = (el: Element, text: string) => `${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? `.${el.className.trim().split(/\s+/).join('.')}` : ''} "${text.slice(0, 40)}"`;

    const candidates = [...document.querySelectorAll('body *')].filter(
      (el) =>
        el.matches('input:not([type=checkbox]):not([type=radio]):not([type=hidden]), select') ||
        [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && (n.textContent ?? '').trim() !== ''),
    );
    for (const el of candidates) {
      if (!(el instanceof HTMLElement) || el.closest(':disabled, [aria-disabled=true], script, style, noscript')) continue;
      const rect = el.getBoundingClientRect();
      if (rect.width === 0 || rect.height === 0 || rect.right <= 0 || rect.bottom <= 0 || !el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
      const text = el instanceof HTMLInputElement || el instanceof HTMLSelectElement ? el.value : (el.textContent ?? '').trim();
      if (text === '') continue;
      const style = getComputedStyle(el);
      const fg = parse(style.color);
      // Background layers from the element down to the first opaque one.
      const layers: Rgba[] = [];
      let unparsed: string | undefined = fg ? undefined : style.color;
      for (let node: Element | null = el; node && !unparsed; node = node.parentElement) {
        const bg = parse(getComputedStyle(node).backgroundColor);
        if (!bg) unparsed = getComputedStyle(node).backgroundColor;
        else if (bg[3] > 0) layers.push(bg);
        if (bg && bg[3] === 1) break;
      }
      if (unparsed) {
        failures.push(`${describe(el, text)}: colour not understood (${unparsed})`);
        continue;
      }
      const background = layers.reduceRight<Rgba>((below, layer) => over(layer, below), [255, 255, 255, 1]);
      const [l1, l2] = [luminance(over(fg!, background)), luminance(background)].sort((a, b) => b - a);
      const ratio = (l1! + 0.05) / (l2! + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) failures.push(`${describe(el, text)}: ${ratio.toFixed(2)}:1 (${style.color} on rgb(${background.slice(0, 3).map(Math.round).join(', ')}))`);
    }
    return failures;
  });
}
