// Reads the embedded mode's usage files (usage-files.ts) for a report: the day files of the
// range for which groups exist, then the day or hour files of the days read, each file once,
// only the page's groups' lines split.
import { readTextIfExists } from '../files.js';
import type { UsageFamily, UsageSpan } from './usage-buckets.js';
import { parseUsageFile, usageFileGroups, usageFilePath } from './usage-files.js';
import type { UsageSource } from './usage-report.js';

export class FileUsageSource implements UsageSource {
  constructor(private readonly dir: string) {}

  async groupNames(family: UsageFamily, days: readonly string[]): Promise<Set<string>> {
    const texts = await Promise.all(days.map((day) => readTextIfExists(usageFilePath(this.dir, day, family, 'd'))));
    const names = new Set<string>();
    for (const text of texts) usageFileGroups(text, names);
    return names;
  }

  async readGroups(family: UsageFamily, span: UsageSpan, periods: readonly string[], groups: readonly string[]): Promise<(string | null)[][]> {
    const wanted = new Set(groups);
    const days = [...new Set(periods.map((period) => period.slice(0, 10)))];
    const texts = await Promise.all(days.map((day) => readTextIfExists(usageFilePath(this.dir, day, family, span))));
    const files = new Map(days.map((day, i) => [day, parseUsageFile(texts[i], wanted)]));
    return periods.map((period) => {
      const lines = files.get(period.slice(0, 10))!;
      const column = span === 'd' ? 0 : Number(period.slice(11, 13));
      return groups.map((group) => lines.get(group)?.[column] || null);
    });
  }
}
