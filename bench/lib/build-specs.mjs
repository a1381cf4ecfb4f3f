// Gateway builds as the A/B tools name them: `name=root[:variation...]`, a checkout with its
// own dist/, run in the bench's production config with some of it changed (a variation) or
// with extra node flags (a variation that starts with `--`), or under another node binary
// (`node=/path/to/node`: the runtime line as a variable, issue 26).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const repoRoot = resolve(import.meta.dirname, '../..');

/** Config edits per variation (the bench's YAML is written by bench/lib/gateway.mjs). */
export const CONFIG_VARIATIONS = {
  'no-limits': (yaml) => yaml.replace(/windows: \[.*\] \}/, 'windows: [] }'),
  'no-request-log': (yaml) => yaml.replace('level: info', 'level: warn'),
  'no-audit-stream': (yaml) => yaml.replace(/ {2}redis_stream: .*\n/, ''),
  'no-usage-rollups': (yaml) => yaml.replace('  max_len: 100000\n', '  max_len: 100000\n  usage_rollups: false\n'),
  // The usage audit without its write-ahead journal (decision 0022): the journal's own cost.
  'no-journal': (yaml) => yaml.replace(/( {2}spool: .*\n)/, '$1  journal: false\n'),
  'log-devnull': (yaml) => yaml.replace(/ {2}file: .*gateway\.log"\n/, '  file: "/dev/null"\n'),
  'pool-128': (yaml) => yaml.replace('    timeout: 30s\n', '    timeout: 30s\n    max_connections: 128\n'),
  // Issue 23's cost check: the bench plan plus a token budget, and a stream cap beside it,
  // at limits no run reaches (docs/decisions/0020). Requests stay JSON: the cap takes no slot.
  budgets: (yaml) => yaml.replace(/(windows: \[.*\]) \}/, '$1, tokens: [ { tokens: 1000000000000, per: 1d } ] }'),
  'budgets-cap': (yaml) => yaml.replace(/(windows: \[.*\]) \}/, '$1, tokens: [ { tokens: 1000000000000, per: 1d } ], concurrency: { streams: 1000000 } }'),
  // The bench agent as an A2A agent on the same stub (docs/a2a.md, decision 0058): the adapter's cost.
  a2a: (yaml) => yaml.replace(/( {4}upstream: .*)\/api\/v1\n/, '    protocol: a2a\n$1/a2a\n'),
  // Issue 35's cost check: the bench plan plus a window per end user (the bench body names
  // user u-1), at a limit no run reaches (decision 0062); and with an end-user token budget.
  'end-users': (yaml) => yaml.replace(/(windows: \[.*\]) \}/, '$1, end_user: { windows: [ { requests: 100000000, per: 1m } ] } }'),
  'end-users-budgets': (yaml) =>
    yaml.replace(/(windows: \[.*\]) \}/, '$1, end_user: { windows: [ { requests: 100000000, per: 1m } ], tokens: [ { tokens: 1000000000000, per: 1d } ] } }'),
  // Issue 35's cost budgets and tool quotas (decision 0065): the bench plan plus a cost budget no
  // run reaches; with end-user windows too (the brief's CPU check); and with a tool quota.
  // Priced (`pricing.default`), so every answer is charged its cost after it.
  // Priced answers alone (no budget): what settling, counting and recording an answer's cost costs.
  pricing: (yaml) => `${yaml}pricing: { default: 0.002 }\n`,
  cost: (yaml) => `${yaml.replace(/(windows: \[.*\]) \}/, '$1, cost: [ { usd: 1000000000, per: 30d } ] }')}pricing: { default: 0.002 }\n`,
  'end-users-cost': (yaml) =>
    `${yaml.replace(/(windows: \[.*\]) \}/, '$1, cost: [ { usd: 1000000000, per: 30d } ], end_user: { windows: [ { requests: 100000000, per: 1m } ] } }')}pricing: { default: 0.002 }\n`,
  'tool-quota': (yaml) => yaml.replace(/(windows: \[.*\]) \}/, '$1, tool_calls: { web_search: [ { calls: 1000000000, per: 1d } ] } }'),
  // Issue 44's cost check (decision 0079): the bench plan with all four scopes — the key (scope
  // key), its account, an end user and a run (the bench body names user u-1 and session s-1) —
  // each with a request window no run reaches: one admit call decides them all.
  'all-scopes': (yaml) =>
    yaml
      .replace('rate_limits: { scope: account,', 'rate_limits: { scope: key,')
      .replace(
        /(windows: \[.*\]) \}/,
        '$1, account: { windows: [ { requests: 100000000, per: 1m } ] }, end_user: { windows: [ { requests: 100000000, per: 1m } ] }, session: { windows: [ { requests: 100000000, per: 1m } ] } }',
      ),
  // The same plain plan counted per key (scope key): the all-scopes build's own baseline.
  'scope-key': (yaml) => yaml.replace('rate_limits: { scope: account,', 'rate_limits: { scope: key,'),
  'no-lease': (yaml) => yaml.replace('rate_limits: { scope: account, on_store_error: allow }', 'rate_limits: { scope: account, on_store_error: allow, lease: false }'),
  // TLS on the listener (decision 0021): node:https, or node:http2 with HTTP/1.1 allowed. The
  // bench's clients still speak HTTP/1.1: what either server costs that path.
  'tls-h1': (yaml, context) => withListenTls(yaml, context, false),
  'tls-h2': (yaml, context) => withListenTls(yaml, context, true),
  // Traces on at ratio 1.0 to a local collector stand-in (decision 0056): what tracing costs
  // when every request is recorded. The tool that runs the build starts the stand-in.
  'telemetry-on': (yaml, context) => `${yaml}telemetry:\n  otlp_endpoint: ${JSON.stringify(needs(context, 'otlpUrl', 'telemetry-on'))}\n  sample_ratio: 1\n`,
  // Issue 36's cost check: a webhook configured (docs/decisions/0067): the outbox's lease
  // renewals and polls and the key expiry sweeper run beside the requests, and each request
  // gets the budget threshold check (decision 0069); the bench crosses no threshold, so
  // nothing publishes per request.
  webhooks: (yaml) => `${yaml}notifications:\n  webhooks:\n    - { url: "http://127.0.0.1:9/hook", secret: "bench-webhook-secret-0123456789" }\n`,
  // Identity (docs/identity.md): an issuer in auth.jwt (a local stand-in the tool starts). `jwt`:
  // the requests carry a JWT access token (verified once, then from the gateway's cache);
  // `jwt-keys`: the issuer configured, the requests still carry the key (what keys pay for it).
  jwt: (yaml, context) => withJwtIssuer(yaml, context, 'jwt'),
  'jwt-keys': (yaml, context) => withJwtIssuer(yaml, context, 'jwt-keys'),
  // Issue 46: an MCP server (bench/reference/stub-mcp-server.mjs, started by the tool that runs
  // the build) behind /mcp/bench-tools, and a tool_calls quota on its tool at a limit no run
  // reaches, so a tools/call takes the full path: key, scope, plan windows, quota, audit.
  mcp: (yaml, context) =>
    `${yaml.replace(/(windows: \[.*\]) \}/, '$1, tool_calls: { bench-tools__echo: [ { calls: 1000000000, per: 1d } ] } }')}mcp_servers:\n  bench-tools: { upstream: ${JSON.stringify(needs(context, 'mcpUrl', 'mcp'))}, timeout: 30s }\n`,
  // The usage audit also into a PostgreSQL table (its own per run, dropped after).
  'audit-postgres': (yaml, context) =>
    yaml.replace(/( {2}spool: .*\n)/, `$1  postgres: { url: ${JSON.stringify(needs(context, 'postgresUrl', 'audit-postgres'))}, table: ${needs(context, 'postgresTable', 'audit-postgres')} }\n`),
};

/** Variations that need a service the running tool provides (bench/count-instructions.mjs does). */
function needs(context, name, variation) {
  if (context[name] === undefined) throw new Error(`the ${variation} variation needs ${name}; run it with bench/count-instructions.mjs`);
  return context[name];
}

function withJwtIssuer(yaml, context, variation) {
  const issuer = needs(context, 'jwtIssuer', variation);
  return `${yaml}auth:\n  jwt:\n    - { issuer: ${JSON.stringify(issuer)}, audiences: [${JSON.stringify(context.jwtAudience)}], claims: { account: org_id, plan: plan, end_user: eu } }\n`;
}

/** Whether the build's requests carry a JWT access token rather than the key. */
export function usesJwt(build) {
  return (build.variations ?? []).includes('jwt');
}

function withListenTls(yaml, context, http2) {
  const dir = context.tlsDir;
  return yaml.replace(
    'listen: { host: 127.0.0.1, port: 0 }',
    `listen: { host: 127.0.0.1, port: 0, tls: { cert: ${JSON.stringify(join(dir, 'server.pem'))}, key: ${JSON.stringify(join(dir, 'server.key'))}, http2: ${http2} } }`,
  );
}

/** Whether the build's listener speaks TLS (its clients then connect with https://). */
export function usesTls(build) {
  return (build.variations ?? []).some((v) => v.startsWith('tls-'));
}

/** A dev certificate for `localhost` in `dir` (scripts/dev-cert.sh); returns the CA's PEM text. */
export function benchCertificate(dir) {
  if (!existsSync(join(dir, 'server.pem'))) execFileSync('sh', [join(repoRoot, 'scripts/dev-cert.sh'), dir, 'localhost', '127.0.0.1'], { stdio: 'ignore' });
  return readFileSync(join(dir, 'ca.pem'), 'utf8');
}

/** `name=root[:variation...]` → { name, root, variations, nodeArgs, nodeBinary }. */
export function parseBuildSpec(spec) {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new Error(`a build is name=root[:variation...], not ${spec}`);
  const [name, rest] = [spec.slice(0, eq), spec.slice(eq + 1)];
  const [root, ...parts] = rest.split(':');
  const nodeBinary = parts.find((p) => p.startsWith('node='))?.slice('node='.length) ?? null;
  const variations = parts.filter((p) => !p.startsWith('--') && !p.startsWith('node='));
  for (const variation of variations) {
    if (!CONFIG_VARIATIONS[variation]) throw new Error(`unknown variation ${variation} (${Object.keys(CONFIG_VARIATIONS).join(', ')})`);
  }
  return { name, root: resolve(root), variations, nodeArgs: parts.filter((p) => p.startsWith('--')), nodeBinary };
}

/** Applies a build's config variations to the config file written for it; `context.tlsDir` for the tls- ones. */
export function applyConfigVariations(configPath, variations, context = {}) {
  let yaml = readFileSync(configPath, 'utf8');
  for (const variation of variations) yaml = CONFIG_VARIATIONS[variation](yaml, context);
  writeFileSync(configPath, yaml);
}
