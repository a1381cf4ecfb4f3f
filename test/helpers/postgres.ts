// The machine's PostgreSQL for tests (127.0.0.1:5432, trust auth, database `test`; another
// with AGENTGW_TEST_POSTGRES_URL): a uniquely named table per test, dropped after it. The
// server is shared, so a test never touches a table it did not make.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const POSTGRES_URL = process.env.AGENTGW_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A table name no other test (or run) uses: agentgw_test_<what>_<random>. */
export function uniqueTable(what: string): string {
  return `agentgw_test_${what}_${randomBytes(5).toString('hex')}`;
}

/** Runs one statement on its own connection (so a test needs no pool to close). */
export async function sql<Row extends Record<string, unknown> = Record<string, unknown>>(text: string, values: unknown[] = [], url = POSTGRES_URL): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Row>(text, values)).rows;
  } finally {
    await client.end();
  }
}

export async function dropTable(table: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(table)) throw new Error(`not a test table name: ${table}`);
  await sql(`DROP TABLE IF EXISTS "${table}"`);
}
