// How often the Usage page reloads its report by itself while its tab is visible
// (docs/dashboard.md "Usage"); hidden tabs make no requests (useAutoRefresh in hooks.ts).
export const USAGE_REFRESH_MS = 30_000;
