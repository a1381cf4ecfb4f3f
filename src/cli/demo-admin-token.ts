// `npm start` (serve --demo) signs the operator in to the dashboard with a demo admin token
// when the config names none: made once, kept in var/demo-admin-token (mode 0600) so every
// later start can print it again, and added to the running config (and to every reload of
// it) as the admin token "demo-admin". Its SHA-256 is all the gateway holds, as for any
// configured token. A config with its own admin.tokens gets no demo token.
import { randomBytes } from 'node:crypto';
import { chmod } from 'node:fs/promises';
import { adminTokenDigest, MIN_ADMIN_TOKEN_CHARS, type GatewayConfig } from '../config/schema.js';
import { readTextIfExists, writeFileAtomic } from '../files.js';

export const DEMO_ADMIN_TOKEN_FILE = 'var/demo-admin-token';
export const DEMO_ADMIN_TOKEN_NAME = 'demo-admin';

const TOKEN_PATTERN = new RegExp(`^[0-9A-Za-z_-]{${MIN_ADMIN_TOKEN_CHARS},256}$`);

/** The stored demo admin token, made (256 random bits, hex) when missing or unreadable. */
export async function ensureDemoAdminToken(path = DEMO_ADMIN_TOKEN_FILE): Promise<string> {
  const stored = (await readTextIfExists(path))?.trim();
  if (stored !== undefined && TOKEN_PATTERN.test(stored)) {
    // Whoever copied the directory may have widened it; the token is a password.
    await chmod(path, 0o600);
    return stored;
  }
  const token = randomBytes(32).toString('hex');
  await writeFileAtomic(path, `${token}\n`);
  return token;
}

/** The config with the demo admin token, unless it configures admin tokens of its own. */
export function withDemoAdminToken(config: GatewayConfig, token: string): GatewayConfig {
  if (config.admin.tokens.length > 0) return config;
  return { ...config, admin: { ...config.admin, tokens: [{ name: DEMO_ADMIN_TOKEN_NAME, role: 'admin', sha256: adminTokenDigest(token) }] } };
}
