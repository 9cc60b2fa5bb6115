#!/usr/bin/env bash
# The whole test suite: lint, types, then every test (unit tests beside the code, end-to-end in test/).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== lint" && biome check .
echo "== typecheck" && tsc --noEmit -p tsconfig.json && tsc --noEmit -p web/tsconfig.json
echo "== build" && node scripts/build.ts && node scripts/build-web.ts --if-stale
echo "== system dependencies" && bash scripts/system-deps.sh
echo "== tests"
exec node --test --test-concurrency=2 --test-timeout=120000 --test-reporter=spec \
  'src/**/*.test.ts' 'test/**/*.test.ts'
