#!/usr/bin/env bash
# Installs the real third-party servers the integration tests run against (Debian packages), where they
# are missing. Tests that need one of them fail loudly when it is absent; nothing is skipped silently.
set -uo pipefail
want=()
command -v tinyproxy >/dev/null 2>&1 || want+=(tinyproxy)
command -v danted >/dev/null 2>&1 || [ -x /usr/sbin/danted ] || want+=(dante-server)
command -v promtool >/dev/null 2>&1 || want+=(prometheus)
command -v chromium >/dev/null 2>&1 || want+=(chromium)
[ -x /usr/sbin/squid ] || want+=(squid)
[ -x /usr/bin/curl ] || want+=(curl)
# Shared state (test/shared-*.test.ts): a throwaway redis-server, and nginx in front of three instances.
[ -x /usr/bin/redis-server ] || want+=(redis-server)
[ -x /usr/sbin/nginx ] || want+=(nginx)
# PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin): the PostgreSQL store tests start a
# throwaway server of their own with initdb + pg_ctl (test/helpers/postgres.ts).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || want+=(postgresql)
# Real proxy clients (test/forward-clients*.test.ts): Debian's python3 with requests and PySocks (for
# socks5h:// proxies), called as /usr/bin/python3 since a pyenv python3 may come first on PATH.
/usr/bin/python3 -c 'import requests' >/dev/null 2>&1 || want+=(python3-requests)
/usr/bin/python3 -c 'import socks' >/dev/null 2>&1 || want+=(python3-socks)
if [ ${#want[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: installing ${want[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null 2>&1 || true
    for p in "${want[@]}"; do
      apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || echo "system-deps: could not install $p" >&2
    done
  else
    echo "system-deps: missing ${want[*]} and cannot apt-get install (not root)" >&2
  fi
fi
# schemathesis (PyPI), an outside tool that fuzzes the API against its own OpenAPI document
# (test/api-fuzz.test.ts), in a virtual environment of its own under .tools/.
ST_VERSION=4.32.5
st_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.tools/st-venv"
if ! "$st_venv/bin/schemathesis" --version 2>/dev/null | grep -q "$ST_VERSION"; then
  echo "system-deps: installing schemathesis $ST_VERSION into .tools/st-venv" >&2
  # Debian's own python3 keeps venv in a separate package.
  if ! python3 -m venv --help >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null 2>&1 || true
  fi
  { python3 -m venv "$st_venv" && "$st_venv/bin/pip" install -q "schemathesis==$ST_VERSION"; } >/dev/null 2>&1 ||
    echo "system-deps: could not install schemathesis $ST_VERSION" >&2
fi
# The Debian packages start system-wide daemons on their default ports; the tests start their own on
# loopback ports of their choosing, so stop those to keep ports and logs quiet.
for svc in tinyproxy danted squid redis-server nginx postgresql; do
  if command -v service >/dev/null 2>&1; then service "$svc" stop >/dev/null 2>&1 || true; fi
done
exit 0
