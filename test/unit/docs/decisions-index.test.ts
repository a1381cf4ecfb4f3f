// docs/decisions/README.md against the records on disk, both ways: every record file (under
// docs/decisions/, and the measurement logs moved to docs/performance/) has one row, and every
// row names a file that exists, with the number its file name carries and the title its first
// line gives. Beside it, the docs' relative links: every link in README.md and docs/**/*.md to
// a local file resolves, and a link with a #fragment into a Markdown page names one of that
// page's headings, so a moved or renamed page (or heading) cannot leave a dangling link behind;
// and a record named by its path in a source comment, a bench script, a test or a doc
// (`docs/decisions/0007…`) is where it says.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = process.cwd();
const INDEX = join(ROOT, 'docs/decisions/README.md');
/** Where numbered records live: decisions, and the measurement logs under docs/performance/. */
const RECORD_DIRS = ['docs/decisions', 'docs/performance'];
const RECORD_FILE = /^(\d{4})-[a-z0-9-]+\.md$/;

/** Repo-relative paths of the numbered record files. */
function recordFiles(): string[] {
  return RECORD_DIRS.flatMap((dir) =>
    existsSync(join(ROOT, dir)) ? readdirSync(join(ROOT, dir)).filter((name) => RECORD_FILE.test(name)).map((name) => `${dir}/${name}`) : [],
  );
}

type IndexRow = { number: string; path: string; title: string; status: string };

/** The index's rows: a table row whose first cell is `[NNNN](path)`, with the path made repo-relative. */
function indexRows(): IndexRow[] {
  const rows: IndexRow[] = [];
  for (const line of readFileSync(INDEX, 'utf8').split('\n')) {
    const match = /^\|\s*\[(\d{4})\]\(([^)#\s]+)\)\s*\|([^|]*)\|([^|]*)\|/.exec(line);
    if (match) {
      rows.push({ number: match[1]!, path: relative(ROOT, resolve(dirname(INDEX), match[2]!)), title: match[3]!.trim(), status: match[4]!.trim() });
    }
  }
  return rows;
}

/** A record's title: its first line without `# NNNN — ` (or `# NNNN: `); backticks dropped, as the index may add them. */
function titleOf(path: string): string {
  const first = readFileSync(join(ROOT, path), 'utf8').split('\n', 1)[0]!;
  return first.replace(/^#\s*\d{4}\s*(?:—|:)\s*/, '').replace(/`/g, '');
}

describe('docs/decisions/README.md, the index of records', () => {
  const rows = indexRows();
  const files = recordFiles();

  it('lists every record file once', () => {
    expect(files.length).toBeGreaterThanOrEqual(40);
    const listed = rows.map((row) => row.path);
    expect(files.filter((file) => !listed.includes(file))).toEqual([]);
    expect(listed.filter((path, i) => listed.indexOf(path) !== i)).toEqual([]);
  });

  it('names in each row a file that exists, under the number in its name, with its title', () => {
    for (const row of rows) {
      expect(existsSync(join(ROOT, row.path)), `${row.number} → ${row.path}`).toBe(true);
      expect(RECORD_FILE.exec(row.path.split('/').pop()!)?.[1], row.path).toBe(row.number);
      expect(row.title.replace(/`/g, ''), row.path).toBe(titleOf(row.path));
    }
    const numbers = rows.map((row) => row.number);
    expect(numbers.filter((n, i) => numbers.indexOf(n) !== i)).toEqual([]);
  });

  it('gives each row a status the index defines, and a measurement log only under docs/performance/', () => {
    for (const row of rows) {
      expect(row.status, row.number).toMatch(/^(current|superseded by .+|superseded in part by .+|measurement log)/);
      expect(row.status.startsWith('measurement log'), row.number).toBe(row.path.startsWith('docs/performance/'));
    }
  });
});

/** Repo-relative paths of the files below `dir` whose name `keep` accepts (no node_modules, results or dot folders). */
function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  if (!existsSync(join(ROOT, dir))) return [];
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    if (name === 'node_modules' || name === 'results' || name.startsWith('.')) return [];
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) return filesUnder(path, keep);
    return keep(name) ? [path] : [];
  });
}

/** Every Markdown page the link check reads: README.md and docs/ (recursively). */
function markdownPages(): string[] {
  return ['README.md', ...filesUnder('docs', (name) => name.endsWith('.md'))];
}

/** The page's text without fenced code blocks, where a `# line` is no heading and `](x)` no link. */
function withoutFences(text: string): string {
  return text.replace(/^[ \t]*(```|~~~)[^\n]*\n[\s\S]*?^[ \t]*\1[^\n]*$/gm, '');
}

/** …and without inline code either: the text whose `](x)` are links. */
function prose(text: string): string {
  return withoutFences(text).replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown page, with GitHub's -1, -2 … for repeated headings. */
function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of withoutFences(readFileSync(path, 'utf8')).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

describe('relative links in README.md and docs/', () => {
  it('resolve to a file, and a #fragment into a page to one of its headings', () => {
    const broken: string[] = [];
    for (const page of markdownPages()) {
      const text = prose(readFileSync(join(ROOT, page), 'utf8'));
      for (const match of text.matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)) {
        const target = match[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
        const [file, fragment] = target.split('#') as [string, string | undefined];
        const path = file === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(file));
        if (!existsSync(path)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (fragment && path.endsWith('.md') && !anchorsOf(path).has(decodeURIComponent(fragment))) {
          broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});

/** Files that may name a record by its path: sources, bench, tests, scripts, docs. */
function filesNamingRecords(): string[] {
  const keep = (name: string) => /\.(ts|tsx|mjs|js|md|json|ya?ml|sh)$/.test(name);
  return ['README.md', ...['src', 'bench', 'test', 'scripts', 'docs'].flatMap((dir) => filesUnder(dir, keep))];
}

describe('records named by path', () => {
  it('resolve: a full path to its file, a bare number (docs/decisions/0020) to a file with that number there', () => {
    const missing: string[] = [];
    for (const file of filesNamingRecords()) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const match of text.matchAll(/docs\/(decisions|performance)\/(\d{4})(-[a-z0-9-]*[a-z0-9](?:\.md)?)?/g)) {
        const [mention, dir, number, slugPart] = match as unknown as [string, string, string, string | undefined];
        const names = readdirSync(join(ROOT, 'docs', dir));
        const found = slugPart ? names.includes(`${number}${slugPart.endsWith('.md') ? slugPart : `${slugPart}.md`}`) : names.some((name) => name.startsWith(`${number}-`));
        if (!found) missing.push(`${file}: ${mention}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
