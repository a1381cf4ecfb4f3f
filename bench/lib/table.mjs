// One table, two renderings: aligned text for the terminal, Markdown for docs/performance.md.

/**
 * @param {string[]} header
 * @param {(string | number | null)[][]} rows cells already formatted (null → "–")
 */
export function renderTable(header, rows) {
  const cells = rows.map((row) => row.map((c) => (c === null || c === undefined ? '–' : String(c))));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  const text = [line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
  const markdown = [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...cells.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  return { text, markdown };
}

export const fmt = {
  int: (x) => (x === null || x === undefined ? null : Math.round(x).toLocaleString('en-US')),
  ms: (x, digits = 2) => (x === null || x === undefined ? null : x.toFixed(digits)),
  ratio: (x) => (x === null || x === undefined ? null : `×${x.toFixed(2)}`),
  signedMs: (x, digits = 2) => (x === null || x === undefined ? null : `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`),
  mb: (kb) => (kb === null || kb === undefined ? null : (kb / 1024).toFixed(0)),
};
