// docs/errors.md against the error registry (src/errors.ts), both ways: every type the gateway
// can answer is documented with the registry's status, and every type the page documents is
// one the registry holds, so neither can change without the other. The page's tables are
// found by their headers: `| status | type | … |` (HTTP errors, chat and admin) and
// `| type | when |` (the final event of a stream); other tables (validation rules) are not read.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_TYPES, STREAM_ERROR_TYPES } from '../../../src/errors.js';

const DOC_PATH = join(process.cwd(), 'docs/errors.md');

/** The Markdown tables of `text`: each its header cells and its body rows' cells. */
function markdownTables(text: string): { header: string[]; rows: string[][] }[] {
  const tables: { header: string[]; rows: string[][] }[] = [];
  const cells = (line: string) => line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
  let block: string[] = [];
  const flush = () => {
    // A table is a header, a |---| separator and its rows.
    if (block.length >= 2 && /^\|[\s|:-]+\|$/.test(block[1]!.trim())) tables.push({ header: cells(block[0]!), rows: block.slice(2).map(cells) });
    block = [];
  };
  for (const line of text.split('\n')) {
    if (line.trim().startsWith('|')) block.push(line);
    else flush();
  }
  flush();
  return tables;
}

/** `` `invalid_json` `` → invalid_json; anything else is a row the reader cannot use. */
function codeName(cell: string | undefined): string {
  const match = /^`([a-z_]+)`$/.exec(cell ?? '');
  if (!match) throw new Error(`docs/errors.md: a type cell should be one \`name\`, found ${JSON.stringify(cell)}`);
  return match[1]!;
}

/** Documented HTTP error types with their statuses, and documented stream error types, in page order. */
function documentedErrors(text: string): { http: [string, number][]; stream: string[] } {
  const http: [string, number][] = [];
  const stream: string[] = [];
  for (const { header, rows } of markdownTables(text)) {
    if (header[0] === 'status' && header[1] === 'type') {
      for (const row of rows) http.push([codeName(row[1]), Number(row[0])]);
    } else if (header[0] === 'type' && header[1] === 'when') {
      for (const row of rows) stream.push(codeName(row[0]));
    }
  }
  return { http, stream };
}

describe('docs/errors.md against src/errors.ts', () => {
  const documented = documentedErrors(readFileSync(DOC_PATH, 'utf8'));

  it('documents each HTTP error type once', () => {
    const types = documented.http.map(([type]) => type);
    expect(types.filter((type, i) => types.indexOf(type) !== i)).toEqual([]);
  });

  it('documents every registry type with its status, and no type the registry lacks', () => {
    const registry = Object.entries(ERROR_TYPES).map(([type, { status }]): [string, number] => [type, status]);
    const byType = (pairs: [string, number][]) => Object.fromEntries([...pairs].sort(([a], [b]) => a.localeCompare(b)));
    expect(byType(documented.http)).toEqual(byType(registry));
  });

  it('documents every stream error type once, and no type the registry lacks', () => {
    expect([...documented.stream].sort()).toEqual(Object.keys(STREAM_ERROR_TYPES).sort());
  });
});
