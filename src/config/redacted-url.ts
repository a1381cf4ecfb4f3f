// A configured URL as the admin listener shows it (/upstreamz, the admin API's agents, the
// dashboard): a password in its userinfo (`https://user:secret@runner/`) is a credential of
// the runner's, so only its place is shown. The gateway still uses the URL as configured.

export const REDACTED_PASSWORD = '***';

export function redactedUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.password === '') return url;
  parsed.password = REDACTED_PASSWORD;
  return parsed.href;
}
