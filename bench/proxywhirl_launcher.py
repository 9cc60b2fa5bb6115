"""Starts proxywhirl 0.3.3's REST API (FastAPI app proxywhirl.api.core:app) with uvicorn, for Rota's benchmarks.

The benchmark runs everything on loopback: the target, and the upstream proxies. proxywhirl refuses both by
design, so this launcher lifts exactly those checks and nothing else:

  * proxywhirl.api.core.validate_proxied_request_url calls validate_target_url_safe(url, allow_private=False),
    which refuses loopback targets: it is called here with allow_private=True (scheme and host checks remain).
  * proxywhirl.models.core.Proxy.validate_local_addresses refuses loopback proxies unless allow_local=True:
    the field's default becomes True.
  * POST /api/v1/request carries a hard-coded @limiter.limit("50/minute") (slowapi) that no environment
    variable changes; Rota runs with generous limits (ROTA_RATE_LIMIT*), so the limiter is disabled here.

Authentication stays on (PROXYWHIRL_REQUIRE_AUTH=true, PROXYWHIRL_API_KEY from the environment).
Usage: python proxywhirl_launcher.py <port>
"""

import sys

import proxywhirl.api.core as core
import uvicorn
from proxywhirl.models import Proxy

_validate_target = core.validate_target_url_safe


def _allow_loopback_target(url: str, allow_private: bool = False) -> None:
    _validate_target(url, allow_private=True)


core.validate_target_url_safe = _allow_loopback_target

Proxy.model_fields["allow_local"].default = True
Proxy.model_rebuild(force=True)

core.limiter.enabled = False

if __name__ == "__main__":
    port = int(sys.argv[1])
    # One worker process, like Rota (ROTA_WORKERS=1). Access log off: Rota logs no line per request either.
    uvicorn.run(core.app, host="127.0.0.1", port=port, workers=1, access_log=False, log_level="warning")
