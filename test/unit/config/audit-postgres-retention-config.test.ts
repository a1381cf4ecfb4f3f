// audit.postgres.retention (docs/audit.md "Partitions and retention"): absent keeps every
// record; a duration of at least a day (whole day partitions are dropped); anything else is
// refused with a message that says what to write.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.js';
import { configProblems as problems, MINIMAL_CONFIG as MINIMAL } from '../../helpers/config-problems.js';

const withRetention = (retention: string): string => `${MINIMAL}audit: { postgres: { url: "postgres://db/x", retention: ${JSON.stringify(retention)} } }\n`;

describe('audit.postgres.retention', () => {
  it('keeps every record when absent', () => {
    const config = parseConfigText(`${MINIMAL}audit: { postgres: { url: "postgres://db/x" } }\n`, 'test.yaml', {});
    expect(config.audit.postgres?.retentionMs).toBeUndefined();
  });

  it('takes a duration of at least a day', () => {
    expect(parseConfigText(withRetention('90d'), 'test.yaml', {}).audit.postgres?.retentionMs).toBe(90 * 86_400_000);
    expect(parseConfigText(withRetention('24h'), 'test.yaml', {}).audit.postgres?.retentionMs).toBe(86_400_000);
  });

  it('refuses less than a day, and what is not a duration', () => {
    expect(problems(withRetention('12h'))).toEqual([expect.stringMatching(/^audit\.postgres\.retention: must be at least 1d: whole day partitions are dropped/)]);
    expect(problems(withRetention('forever'))).toEqual([expect.stringMatching(/^audit\.postgres\.retention: /)]);
  });
});
