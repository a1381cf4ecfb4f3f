// The dependency rules of src/, checked by `npm run lint:deps` and by
// test/unit/layering.test.ts (so `npm test` and CI fail on a violation).
//
// The layer order, lowest first. A file may import from its own layer, from the
// base files, and from layers BELOW it; never from a layer above it, and never
// from a peer in the same rank (docs/design.md, "Layout"). A lower layer that needed
// something from a higher one would tie the two together; the shared piece belongs in the
// lower layer instead.
const LAYERS = [
  // base files: the one error registry, time, deadlines, file helpers, JSON text
  // and the logger. Everything may use them; they use nothing in a folder.
  { name: 'base', path: '^src/(errors|clock|deadline|files|json-text|log-destination|log-format|logger|node-http)[.]ts$' },
  // config/: the config schema and its loading; knows nothing of what runs.
  { name: 'config', path: '^src/config/' },
  // metrics/: the one metrics module; may read config, nothing that produces numbers.
  { name: 'metrics', path: '^src/metrics/' },
  // redis/: the one Redis client factory, used by every Redis-backed store.
  { name: 'redis', path: '^src/redis/' },
  // notifications/: the notifier, its outbox and the webhook delivery (docs/design.md,
  // "Notifications"); below the stores, which publish key and budget events through it.
  { name: 'notifications', path: '^src/notifications/' },
  // keys/, ratelimit/, audit/: the three stores. Peers: none imports another, so
  // each can change its backend without touching the other two.
  { name: 'keys', path: '^src/keys/', peers: ['ratelimit', 'audit'] },
  { name: 'ratelimit', path: '^src/ratelimit/', peers: ['keys', 'audit'] },
  { name: 'audit', path: '^src/audit/', peers: ['keys', 'ratelimit'] },
  // auth/: turns a bearer token into a key record, over keys/.
  { name: 'auth', path: '^src/auth/' },
  // request/: what one request carries (RequestState, ChatRoute, UpstreamFailureKind),
  // shared by proxy/ and http/ so neither has to import the other's types upward.
  { name: 'request', path: '^src/request/' },
  // telemetry/: the request's trace spans (OpenTelemetry), which proxy/ and http/ report to;
  // over request/, whose RequestTrace interface it implements.
  { name: 'telemetry', path: '^src/telemetry/' },
  // proxy/: the upstream exchange and the SSE relay.
  { name: 'proxy', path: '^src/proxy/' },
  // policy/: the admission policy of a (plan, key limits) pair, compiled once, and the one
  // limit stage's per-request admission over the limiter (docs/policy.md "The policy room").
  { name: 'policy', path: '^src/policy/' },
  // http/: the public listener: routing, validation, error responses.
  { name: 'http', path: '^src/http/' },
  // mcp/: the MCP front door (docs/mcp.md): over http/, whose stages (authentication, errors,
  // client address) it reuses; the composition root mounts it on the public listener.
  { name: 'mcp', path: '^src/mcp/' },
  // admin/: the admin listener (metrics, readiness), beside the public one.
  { name: 'admin', path: '^src/admin/' },
  // src/gateway.ts: the composition root, the only place that chooses implementations.
  { name: 'gateway', path: '^src/gateway[.]ts$' },
  // cli/: the commands; the top, nothing imports it.
  { name: 'cli', path: '^src/cli/' },
];

// Peers share a rank: keys/, ratelimit/ and audit/ sit at the same height.
const RANKS = [['base'], ['config'], ['metrics'], ['redis'], ['notifications'], ['keys', 'ratelimit', 'audit'], ['auth'], ['request'], ['telemetry'], ['proxy'], ['policy'], ['http'], ['mcp'], ['admin'], ['gateway'], ['cli']];

// demo-agent/ is a standalone program outside the order: it imports only base files,
// and only cli/ (which starts it) imports it.
const DEMO_AGENT = '^src/demo-agent/';

// The concrete stores and limiters, by folder: only the composition root (src/gateway.ts),
// cli/ and the folder's own factory (open-key-store.ts, open-audit-log.ts, ...) import them.
const IMPLEMENTATIONS = {
  keys: ['file-key-store', 'redis-key-store'],
  ratelimit: ['memory-rate-limiter', 'redis-rate-limiter', 'failover-rate-limiter'],
  audit: ['file-audit-sink', 'redis-stream-audit-sink', 'postgres-audit-sink', 'batching-audit-log', 'file-audit-reader', 'redis-stream-audit-reader'],
};

const byName = new Map(LAYERS.map((layer) => [layer.name, layer]));
const rankOf = (name) => RANKS.findIndex((rank) => rank.includes(name));
const anyOf = (paths) => paths.join('|');

const upwardRules = LAYERS.map((layer) => {
  const forbidden = LAYERS.filter(
    (other) => rankOf(other.name) > rankOf(layer.name) || (layer.peers ?? []).includes(other.name),
  );
  return forbidden.length === 0
    ? undefined
    : {
        name: `layer-${layer.name}`,
        comment: `${layer.name} must not import ${forbidden.map((other) => other.name).join(', ')} (above it, or a peer)`,
        severity: 'error',
        from: { path: layer.path },
        to: { path: anyOf(forbidden.map((other) => other.path)) },
      };
}).filter(Boolean);

const KNOWN = anyOf([...LAYERS.map((layer) => layer.path), DEMO_AGENT]);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle: the modules cannot be understood, tested or loaded apart.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upwardRules,
    {
      name: 'demo-agent-standalone',
      comment: 'demo-agent/ is a standalone program: it imports only base files.',
      severity: 'error',
      from: { path: DEMO_AGENT },
      to: { path: '^src/', pathNot: anyOf([byName.get('base').path, DEMO_AGENT]) },
    },
    {
      name: 'demo-agent-only-from-cli',
      comment: 'Only cli/ starts the demo agent; the gateway never depends on it.',
      severity: 'error',
      from: { path: '^src/', pathNot: anyOf([byName.get('cli').path, DEMO_AGENT]) },
      to: { path: DEMO_AGENT },
    },
    {
      name: 'file-outside-the-order',
      comment: 'Every file in src/ belongs to a layer: add a new folder to LAYERS in .dependency-cruiser.cjs.',
      severity: 'error',
      from: { path: '^src/', pathNot: KNOWN },
      to: {},
    },
    {
      name: 'import-outside-the-order',
      comment: 'An import of a src/ file that belongs to no layer: add its folder to LAYERS in .dependency-cruiser.cjs.',
      severity: 'error',
      from: {},
      to: { path: '^src/', pathNot: KNOWN },
    },
    ...Object.entries(IMPLEMENTATIONS).map(([folder, files]) => ({
      name: `${folder}-implementations-only-from-the-composition-root`,
      comment: `Which ${folder} implementation runs is chosen in src/gateway.ts or a cli/ command (or a factory inside ${folder}/); everyone else sees the interface.`,
      severity: 'error',
      from: { path: '^src/', pathNot: `^src/(gateway[.]ts$|cli/|${folder}/)` },
      to: { path: `^src/${folder}/(${files.join('|')})[.]ts$` },
    })),
    {
      name: 'ioredis-only-in-redis-files',
      comment: 'Only src/redis/ and files named *redis* talk to ioredis; everything else goes through them.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/redis/|redis[^/]*[.]ts$' },
      to: { path: '(^|/)node_modules/ioredis/' },
    },
    {
      name: 'pg-only-in-postgres-files',
      comment: 'Only files named *postgres* talk to the pg driver; everything else goes through the sink they make.',
      severity: 'error',
      from: { path: '^src/', pathNot: 'postgres[^/]*[.]ts$' },
      to: { path: '(^|/)node_modules/pg/' },
    },
    {
      name: 'opentelemetry-only-in-telemetry',
      comment: 'Only src/telemetry/ uses the OpenTelemetry SDK; the request path sees the RequestTrace interface (src/request/request-trace.ts).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/telemetry/' },
      to: { path: '(^|/)node_modules/@opentelemetry/' },
    },
  ],
  options: {
    // Type-only imports count: a type from a higher layer is still an upward dependency.
    tsPreCompilationDeps: true,
    doNotFollow: { path: '(^|/)node_modules/' },
    moduleSystems: ['es6', 'cjs'],
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
