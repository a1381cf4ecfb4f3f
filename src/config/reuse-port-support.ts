// `listen.reuse_port` needs SO_REUSEPORT with the kernel spreading connections over the
// sockets (Linux), and Node's `reusePort` listen option (Node 23.1 and 22.12; an older Node
// ignores the option, and the second instance would fail with EADDRINUSE or, worse, the
// option's absence would go unnoticed). Checked when the config loads, so an unsupported
// runtime is a config error at start rather than a surprise on the second instance.

/** Why `reuse_port` cannot work on this platform and Node; undefined when it can. */
export function reusePortUnsupported(platform: string, nodeVersion: string): string | undefined {
  if (platform !== 'linux') return `needs Linux (SO_REUSEPORT spreading connections); this is ${platform}`;
  const [major = 0, minor = 0] = nodeVersion.replace(/^v/, '').split('.').map(Number);
  const supported = major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
  return supported ? undefined : `needs Node 22.12 or later (listen's reusePort option); this is Node ${nodeVersion}`;
}
