// Reads the embedded mode's usage day files (file-usage-rollup.ts) for a report.
import { readTextIfExists } from '../files.js';
import { parseUsageDay, usageDayFile, type UsageDay } from './file-usage-rollup.js';
import type { BucketFields } from './usage-buckets.js';
import type { UsageBucketRef, UsageSource } from './usage-report.js';

export class FileUsageSource implements UsageSource {
  constructor(private readonly dir: string) {}

  private async readDay(day: string): Promise<UsageDay | undefined> {
    const text = await readTextIfExists(usageDayFile(this.dir, day));
    return text === undefined ? undefined : parseUsageDay(text);
  }

  async indexMembers(days: readonly string[]): Promise<Map<string, Set<string>>> {
    const out = new Map<string, Set<string>>();
    for (const day of days) {
      const parsed = await this.readDay(day);
      if (parsed) out.set(day, parsed.index);
    }
    return out;
  }

  async readMerged(groups: readonly (readonly UsageBucketRef[])[]): Promise<BucketFields[]> {
    const days = new Map<string, UsageDay | undefined>();
    const out: BucketFields[] = [];
    for (const refs of groups) {
      const sum: BucketFields = new Map();
      for (const ref of refs) {
        const day = ref.hour.slice(0, 10);
        if (!days.has(day)) days.set(day, await this.readDay(day));
        for (const [field, n] of days.get(day)?.buckets.get(`${ref.family}:${ref.group}:${ref.hour}`) ?? []) sum.set(field, (sum.get(field) ?? 0) + n);
      }
      out.push(sum);
    }
    return out;
  }
}
