# syntax=docker/dockerfile:1
#
# The build stage type-checks the sources as a gate and builds the production bundle (scripts/build.ts:
# dist/main.js, and the one ReDoc file the docs page serves, so that the redoc package and its framework
# stay out of the image); the deps stage builds the production node_modules
# (better-sqlite3 is native: its install script runs node-gyp, which needs python3 and make, and a
# compiler where the package has no prebuilt binary for the platform), and the runtime image gets only
# what runs.
#
# Build: docker build -t rota .     Podman/Buildah: podman build --format docker -t rota .
# (their default OCI format has no HEALTHCHECK and drops it).

ARG NODE_IMAGE=node:24-slim

# --- production dependencies (native modules compiled here, not in the runtime image) ---
FROM ${NODE_IMAGE} AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# node-gyp uses the headers the Node image ships in /usr/local/include/node instead of downloading them
# from nodejs.org, which a build without that access cannot (npm 11 warns "Unknown env config nodedir";
# node-gyp still reads it).
ENV npm_config_nodedir=/usr/local
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci can refuse a lock file npm itself wrote when another platform's optional package is missing from
# the registry (npm/cli#9846); npm install honours the same lock file.
# Behind a TLS-intercepting proxy, pass its CA as a build secret (never stored in a layer):
#   docker build --secret id=npm_ca,src=/path/to/ca.pem .     (podman/buildah: the same flag)
# An HTTP(S) proxy goes in as Docker's predefined build args (--build-arg HTTPS_PROXY=...), which
# npm reads from the environment.
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    npm ci --omit=dev --no-audit --no-fund || npm install --omit=dev --no-audit --no-fund
# better-sqlite3 ships the SQLite sources and prebuilt add-ons for eight platforms (~27 MB): only the
# add-on this platform loads goes on (~2 MB), checked to open a database (scripts/prune-native.ts).
COPY scripts/prune-native.ts ./scripts/prune-native.ts
RUN node scripts/prune-native.ts && rm -r scripts

# --- build: full install and a type check, so a broken tree never becomes an image ---
FROM deps AS build
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    npm ci --no-audit --no-fund || npm install --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY scripts/build.ts ./scripts/build.ts
COPY web ./web
RUN ./node_modules/.bin/tsc --noEmit -p tsconfig.json && node scripts/build.ts --force

# --- runtime ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    ROTA_HOST=0.0.0.0 \
    ROTA_PORT=8000
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json package-lock.json ./
# Copied from the build stage so the image only ever holds a bundle of sources that passed the type check.
COPY --from=build --chown=root:root /app/dist ./dist
COPY --from=build --chown=root:root /app/web/dist ./web/dist
# The official image's unprivileged "node" user (uid 1000) owns only the data directory; the code
# stays root-owned and read-only to the process.
RUN mkdir -p /data && chown node:node /data && chmod 0700 /data
USER node
VOLUME ["/data"]
EXPOSE 8000
# slim has no curl; Node's fetch does the check. /api/v1/health needs no API key.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.ROTA_PORT||8000)+'/api/v1/health',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
# Rota's heap flags (src/runtime/node-flags.ts), given here so that the process starts with them; without
# them Rota re-executes itself with them (same pid), one more Node boot. A test keeps the two lists equal.
CMD ["node", "--max-semi-space-size=16", "--expose-gc", "--heap-growing-percent=50", "dist/main.js"]
