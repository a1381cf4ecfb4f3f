// Tiny flag reader shared by the reference programs: `--name value` wins over the env var,
// which wins over the fallback. Kept dependency-free so the programs start fast as children.
import { pathToFileURL } from 'node:url';

/** @returns {string | undefined} */
export function readOption(argv, flag, envName, fallback) {
  const i = argv.indexOf(`--${flag}`);
  if (i !== -1 && i + 1 < argv.length) return argv[i + 1];
  const fromEnv = envName ? process.env[envName] : undefined;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return fallback;
}

export function hasFlag(argv, flag) {
  return argv.includes(`--${flag}`);
}

/** True when the module at `importMetaUrl` is the script node was started with. */
export function isMainModule(importMetaUrl) {
  return process.argv[1] !== undefined && importMetaUrl === pathToFileURL(process.argv[1]).href;
}

/**
 * Resolves once the server listens; returns the bound port (port 0 picks a free one).
 * `reusePort`: SO_REUSEPORT (Linux, Node >= 22.12), so several processes can listen on one
 * port and the kernel spreads the connections between them.
 */
export function listen(server, port, host, { reusePort = false } = {}) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(reusePort ? { port, host, reusePort: true } : { port, host }, () => {
      server.off('error', reject);
      resolve(server.address().port);
    });
  });
}

/** Closes the server and drops idle keep-alive sockets so close() does not wait on them. */
export function closeServer(server) {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections?.();
  });
}
