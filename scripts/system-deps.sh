#!/usr/bin/env bash
# Installs the real third-party servers the integration tests run against (Debian packages), where they
# are missing. Tests that need one of them fail loudly when it is absent; nothing is skipped silently.
set -uo pipefail
# The files looked at are under this root: empty, the machine itself (test/system-deps.test.ts sets a tree
# of stand-ins).
root="${SYSTEM_DEPS_ROOT:-}"
want=()
command -v tinyproxy >/dev/null 2>&1 || want+=(tinyproxy)
command -v danted >/dev/null 2>&1 || [ -x "$root/usr/sbin/danted" ] || want+=(dante-server)
command -v promtool >/dev/null 2>&1 || want+=(prometheus)
command -v chromium >/dev/null 2>&1 || want+=(chromium)
[ -x "$root/usr/sbin/squid" ] || want+=(squid)
[ -x "$root/usr/bin/curl" ] || want+=(curl)
# Shared state (test/shared-*.test.ts): a throwaway redis-server, and nginx in front of three instances.
[ -x "$root/usr/bin/redis-server" ] || want+=(redis-server)
[ -x "$root/usr/sbin/nginx" ] || want+=(nginx)
# PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin): the PostgreSQL store tests start a
# throwaway server of their own with initdb + pg_ctl (test/helpers/postgres.ts).
compgen -G "$root/usr/lib/postgresql/*/bin/initdb" >/dev/null || want+=(postgresql)
# Real proxy clients (test/forward-clients*.test.ts): Debian's python3 with requests and PySocks (for
# socks5h:// proxies), called as /usr/bin/python3 since a pyenv python3 may come first on PATH.
"$root/usr/bin/python3" -c 'import requests' >/dev/null 2>&1 || want+=(python3-requests)
"$root/usr/bin/python3" -c 'import socks' >/dev/null 2>&1 || want+=(python3-socks)
if [ ${#want[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: installing ${want[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    # Debian packages start their daemons (squid, nginx, redis-server, postgresql...) on their default
    # ports as they install. A policy-rc.d that refuses every start keeps them from it, so nothing has to
    # be stopped afterwards and a service of the machine's own, running before, is never touched. Written
    # only where there is none, and removed after, even when interrupted; one already there is kept.
    policy="$root/usr/sbin/policy-rc.d"
    made_policy=
    if [ ! -e "$policy" ] &&
      printf '#!/bin/sh\n# scripts/system-deps.sh: no daemon starts while it installs.\nexit 101\n' >"$policy" &&
      chmod 755 "$policy"; then
      made_policy=1
      trap '[ -n "$made_policy" ] && rm -f "$policy"' EXIT
    fi
    apt-get update -qq >/dev/null 2>&1 || true
    for p in "${want[@]}"; do
      apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 || echo "system-deps: could not install $p" >&2
    done
    if [ -n "$made_policy" ]; then
      rm -f "$policy"
      made_policy=
    fi
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
# Scrapy (PyPI), a real crawler for the HTTPS inspection tests (test/inspect-clients.test.ts), in a virtual
# environment of its own under .tools/.
SCRAPY_VERSION=2.19.0
scrapy_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.tools/scrapy-venv"
if ! "$scrapy_venv/bin/scrapy" version 2>/dev/null | grep -q "$SCRAPY_VERSION"; then
  echo "system-deps: installing Scrapy $SCRAPY_VERSION into .tools/scrapy-venv" >&2
  { python3 -m venv "$scrapy_venv" && "$scrapy_venv/bin/pip" install -q "scrapy==$SCRAPY_VERSION"; } >/dev/null 2>&1 ||
    echo "system-deps: could not install Scrapy $SCRAPY_VERSION" >&2
fi
# Nothing is stopped here: the tests start their own servers on free loopback ports and stop only those,
# and no daemon was started by the installs above.
exit 0
