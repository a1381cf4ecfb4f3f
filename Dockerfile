# agent-gateway container image (docs/operations.md "Docker").
#   docker build -t agent-gateway .
#   docker run -v $PWD/config/docker.yaml:/etc/agent-gateway/gateway.yaml:ro -p 8080:8080 agent-gateway
# The config is read from /etc/agent-gateway/gateway.yaml (mount it); any other command runs
# the same way: `docker run … agent-gateway keys list --config /etc/agent-gateway/gateway.yaml`.

# --- build: compile TypeScript with the dev dependencies --------------------------------
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the lockfile: `npm ci` fails rather than resolve anything afresh.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY web ./web
# The Node.js version check the CLI imports first (and its types, for tsc).
COPY scripts/node-guard.mjs scripts/node-guard.d.mts ./scripts/
# tsc, then the dashboard (web/ → dist/dashboard/, served by the admin listener).
RUN npx tsc -p tsconfig.build.json && npx vite build --config web/vite.config.ts

# --- runtime: production dependencies only, non-root -------------------------------------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY scripts/node-guard.mjs ./scripts/
COPY config ./config
# The OpenAPI documents the admin listener serves at /openapi/*.json.
COPY openapi ./openapi
# var/ holds the audit spool (and, embedded, keys and audit files): the only writable path.
RUN mkdir -p /app/var /etc/agent-gateway && chown -R node:node /app/var
USER node
# 8080: the public gateway port (listen.port); 9090: the admin listener (admin.port).
EXPOSE 8080 9090
# /healthz on the admin listener: the process is alive. (Readiness — /readyz — is for load
# balancers and orchestrators; a container restart would not fix a Redis outage.)
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9090/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
CMD ["serve", "--config", "/etc/agent-gateway/gateway.yaml"]
