// GET /admin/v1/usage pages a report by groups (docs/admin-api.md "Usage"); the dashboard's
// charts and top lists want every group of the range, so this follows next_cursor and
// returns one report with every page's rows.
import { api, query } from '../api.js';
import type { UsageReport } from '../types.js';

export async function fetchUsage(params: Record<string, string | number | undefined>): Promise<UsageReport> {
  let cursor: string | undefined;
  let report: UsageReport | undefined;
  do {
    const page: UsageReport = await api.get<UsageReport>(`/admin/v1/usage${query({ ...params, limit: 1000, cursor })}`);
    if (report === undefined) report = page;
    else report.data.push(...page.data);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return report;
}
