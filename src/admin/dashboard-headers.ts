// Headers on every answer under /dashboard (docs/dashboard.md "Security headers"). The page
// loads only its own files: no inline script or style, no third-party origin, no framing.
// uPlot and Preact set styles through the CSSOM (element.style), which style-src does not
// govern, so 'unsafe-inline' is not needed.
import type { ServerResponse } from 'node:http';

export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const SECURITY_HEADERS: readonly [string, string][] = [
  ['Content-Security-Policy', DASHBOARD_CSP],
  ['X-Frame-Options', 'DENY'],
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
  ['Cross-Origin-Opener-Policy', 'same-origin'],
  ['Cross-Origin-Resource-Policy', 'same-origin'],
];

export function setDashboardSecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
}
