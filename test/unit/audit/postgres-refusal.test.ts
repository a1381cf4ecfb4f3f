// Which failures of the PostgreSQL sink are refusals of the data (set aside) and which are the
// server being unavailable (spooled and retried): src/audit/postgres-refusal.ts, decision 0088.
// Errors are the driver's own DatabaseError, as node-postgres raises them.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isMissingPartition, refusedForItsData } from '../../../src/audit/postgres-refusal.js';

function serverError(code: string, message: string, routine?: string): Error {
  const error = new pg.DatabaseError(message, message.length, 'error');
  Object.assign(error, { code, severity: 'ERROR', routine });
  return error;
}

describe('refusedForItsData', () => {
  it('is set for data exceptions (22), integrity constraints (23) and a row too large for an index (54000)', () => {
    expect(refusedForItsData(serverError('22P02', 'invalid input syntax for type json'))).toEqual({ code: '22P02', reason: 'invalid input syntax for type json' });
    expect(refusedForItsData(serverError('23514', 'new row for relation "t" violates check constraint "c"'))?.code).toBe('23514');
    expect(refusedForItsData(serverError('54000', 'index row size 3016 exceeds btree version 4 maximum 2704'))?.code).toBe('54000');
  });

  it('is undefined when the server is away, busy, shutting down or timed out, and for socket errors', () => {
    for (const code of ['08006', '57P01', '57014', '53300', '40001', '42P01']) expect(refusedForItsData(serverError(code, 'x')), code).toBeUndefined();
    expect(refusedForItsData(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBeUndefined();
    expect(refusedForItsData(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))).toBeUndefined();
    expect(refusedForItsData('not an error')).toBeUndefined();
  });

  it('takes a row no partition holds for stale partitions (retried), not for bad data', () => {
    const noPartition = serverError('23514', 'no partition of relation "t" found for row', 'ExecFindPartition');
    expect(isMissingPartition(noPartition)).toBe(true);
    expect(refusedForItsData(noPartition)).toBeUndefined();
    expect(isMissingPartition(serverError('23514', 'new row violates check constraint "c"', 'ExecConstraints'))).toBe(false);
  });

  it('keeps the reason short and well-formed', () => {
    const reason = refusedForItsData(serverError('22021', `invalid byte sequence \ud800${'x'.repeat(500)}`))!.reason;
    expect(reason).toHaveLength(200);
    expect(reason).not.toMatch(/[\ud800-\udfff]/);
  });
});
