// The loader-thread half of loaded-modules-preload.mjs on Node versions without
// module.registerHooks (22.13, 22.14): every resolved URL is posted back to the main thread.
let port;

export function initialize(data) {
  port = data.port;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  port?.postMessage(resolved.url);
  return resolved;
}
