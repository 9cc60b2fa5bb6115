import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type RunningServer, startServer } from './helpers/server.ts';

/**
 * schemathesis (PyPI, installed by scripts/system-deps.sh into .tools/st-venv) generates requests from
 * /openapi.json, valid and invalid, and checks every answer against the document: status codes, bodies,
 * headers, content types, auth, 405s and their Allow header, schema-valid requests accepted and invalid
 * ones refused, and stateful sequences that follow the document's links (add a proxy, read it, read and
 * reset its breaker, delete it, read it again). Every check runs, with the API key (auth on).
 *
 * Not fuzzed, with reasons: PUT config (it is meant to change the rate limits, and a random limit of
 * 1/minute would leave everything after it untested) and PUT sources (it makes Rota fetch whatever URLs it
 * is given, every `refresh_s` from then on), and GET requests/stream (Server-Sent Events: an answer that
 * never ends by design, which a fuzzer waiting for the whole body would wait on until its timeout).
 * PUT policies is fuzzed on its own, once the rest is done: a random rule (`host_rate_limit: 1/minute` for
 * `*`) rightly makes every later proxied request wait up to its timeout, past the fuzzer's.
 *
 * Answers the document states but no JSON Schema can decide are told apart by the hook below, by their
 * content, never by their status alone: a schema-valid target refused by the SSRF rules (what a name
 * resolves to, which depends on DNS), a retry or ban policy whose fields disagree with the policy in
 * place (a comparison between fields and with the server's state), and the documented 502/503/504 of a
 * pool whose proxies all fail (the fuzzer's own proxies, which lead nowhere). Any other refusal of
 * schema-valid data and any other 5xx fails the run.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCHEMATHESIS = `${ROOT}.tools/st-venv/bin/schemathesis`;
const KEY = 'api-fuzz-key-0123456789abcdef';
const GENEROUS = '1000000/second';
const EXCLUDED = ['putConfig', 'putSources', 'getRequestsStream', 'putPolicies'];
/** Fuzzed on their own, after the rest (see below). */
const ALONE = ['getPolicies', 'putPolicies'];

const HOOKS = `"""Rota's documented answers that no JSON Schema can decide (test/api-fuzz.test.ts)."""
import json

import schemathesis

# 400 INVALID_URL of POST request for an address or a name: decided by DNS and the address a name has.
# Not "scheme" nor "credentials": the document's url pattern rules those out.
SSRF_ADDRESS_REASONS = {
    "loopback", "private", "link_local", "reserved", "multicast", "broadcast", "unspecified",
    "internal_domain", "unresolvable",
}
# 400 INVALID_CONFIGURATION comparing two fields of the policy an update would leave.
CROSS_FIELD = {
    "PUT /api/v1/retry/policy": {("body", "max_backoff_delay"): "max_backoff_delay must be >= base_delay"},
    "PUT /api/v1/ban-policy": {("body", "max_cooldown_s"): "max_cooldown_s must be >= cooldown_s"},
}
# The 5xx a pool of failing proxies answers with, as the document describes them.
POOL_ANSWERS = {
    "POST /api/v1/request": {
        502: {"PROXY_FAILOVER_EXHAUSTED", "REQUEST_FAILED", "PROXY_ERROR"},
        503: {"PROXY_POOL_EMPTY"},
        504: {"REQUEST_TIMEOUT", "TARGET_UNREACHABLE"},
    },
    "GET /api/v1/rotate": {503: {"PROXY_POOL_EMPTY"}},
}


# 400 INVALID_CONFIGURATION of PUT policies for a rule name an earlier rule of the list already has.
def _reused_name(d):
    loc = d.get("loc", [])
    return len(loc) == 4 and loc[1] == "rules" and loc[3] == "name" and str(d.get("msg", "")).startswith(
        "name already used by rules["
    )


def _json(response):
    try:
        return json.loads(response.content)
    except ValueError:
        return None


@schemathesis.hook
def filter_failure(context, failure, case, response):
    operation = f"{case.method.upper()} {case.path}"
    body = _json(response)
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    if failure.code == "ST202" and response.status_code == 400:
        if operation == "POST /api/v1/request" and code == "INVALID_URL" and isinstance(details, dict):
            return details.get("reason") not in SSRF_ADDRESS_REASONS
        if operation == "PUT /api/v1/policies" and code == "INVALID_CONFIGURATION" and isinstance(details, list):
            return not all(_reused_name(d) for d in details)
        rules = CROSS_FIELD.get(operation)
        if rules and code == "INVALID_CONFIGURATION" and isinstance(details, list) and details:
            return not all(rules.get(tuple(d.get("loc", []))) == d.get("msg") for d in details)
    if failure.code == "ST101":
        if operation == "GET /api/v1/health" and response.status_code == 503:
            return not (isinstance(body, dict) and body.get("status") == "unhealthy")
        return code not in POOL_ANSWERS.get(operation, {}).get(response.status_code, set())
    return True
`;

// The fuzzer uses the document and nothing else: error feedback would narrow the url of POST request to
// what a 422 message suggests (any https://name), and every such name fails DNS in a sandbox.
const CONFIG = `[phases.fuzzing.error-feedback]
enabled = false
`;

function run(cmd: string, args: string[], cwd: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; out: string }>((resolve) => {
    const p = spawn(cmd, args, { cwd, env: { ...process.env, NO_COLOR: '1', ...env } });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    p.on('close', (code) => resolve({ code, out }));
  });
}

/** Operations schemathesis selects: all of the live document's but the excluded ones. */
async function selectedOperations(url: string): Promise<number> {
  const doc = (await (await fetch(`${url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  const ops = Object.values(doc.paths).flatMap((item) => Object.values(item));
  for (const id of EXCLUDED)
    assert.ok(
      ops.some((op) => op.operationId === id),
      `${id} is documented`,
    );
  return ops.filter((op) => !EXCLUDED.includes(op.operationId ?? '')).length;
}

describe('the API against its own OpenAPI document (schemathesis)', () => {
  let server: RunningServer | undefined;
  let work: string | undefined;
  before(async () => {
    if (!existsSync(SCHEMATHESIS)) return;
    server = await startServer({
      ROTA_REQUIRE_AUTH: 'true',
      ROTA_API_KEY: KEY,
      ROTA_LOG_LEVEL: 'warn',
      // Nothing reachable: health checks and proxied requests fail fast instead of waiting. The proxies the
      // fuzzer adds lead nowhere: each may cost a connect timeout once, then its breaker stays open.
      ROTA_HEALTH_CHECK_URL: 'http://127.0.0.1:9/',
      ROTA_CONNECT_TIMEOUT_S: '0.25',
      ROTA_BREAKER_FAILURE_THRESHOLD: '1',
      ROTA_BREAKER_TIMEOUT_S: '3600',
      // Schema-valid targets must reach the pool, not only the SSRF rules: every address and the document's
      // example name are exempt (Rota itself only ever connects to proxies). Names the fuzzer makes up
      // still do not resolve: a documented 400, told apart by the hook.
      ROTA_SSRF_ALLOW: '0.0.0.0/0,::/0,example.com',
      // Fuzzed proxies may name any address: Rota must never connect to one. The only proxy host it may
      // reach is a loopback address nothing listens on, so no packet leaves the machine.
      ROTA_UPSTREAM_ALLOW: '127.255.255.254/32',
      ROTA_RATE_LIMIT: GENEROUS,
      ROTA_API_KEY_RATE_LIMIT: GENEROUS,
      ROTA_RATE_LIMIT_REQUEST: GENEROUS,
      ROTA_RATE_LIMIT_ADD_PROXY: GENEROUS,
      ROTA_RATE_LIMIT_HEALTH_CHECK: GENEROUS,
      ROTA_RATE_LIMIT_CONFIG: GENEROUS,
      ROTA_RATE_LIMIT_RESET: GENEROUS,
      ROTA_AUTH_FAILURE_LIMIT: GENEROUS,
    });
    // Hooks, configuration and schemathesis's own files go to a temporary directory, never the checkout.
    work = mkdtempSync(join(tmpdir(), 'rota-api-fuzz-'));
    writeFileSync(join(work, 'rota_hooks.py'), HOOKS);
    writeFileSync(join(work, 'schemathesis.toml'), CONFIG);
  });
  after(async () => {
    await server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  // ~80 s alone on 2 cores, two schemathesis runs; beside another test file it can pass the suite's
  // 120 s default (it did once in a full run), so it has its own bound.
  it('finds no answer that disagrees with the document, and no 500', { timeout: 300_000 }, async (t) => {
    // Like the Debian servers: a missing tool fails loudly, it never turns into a skipped check.
    assert.ok(
      server && work,
      `schemathesis is not installed at ${SCHEMATHESIS} (scripts/system-deps.sh installs it)`,
    );
    const selected = await selectedOperations(server.url);
    const url = server.url;
    const dir = work;
    const fuzz = (select: string[]) =>
      run(
        SCHEMATHESIS,
        [
          '--config-file',
          join(dir, 'schemathesis.toml'),
          'run',
          `${url}/openapi.json`,
          '--url',
          url,
          '--header',
          `X-API-Key: ${KEY}`,
          '--checks',
          'all',
          ...select,
          '--max-examples',
          '40',
          '--seed',
          '20261125',
          '--generation-database',
          'none',
          '--request-timeout',
          '20',
          '--no-color',
        ],
        dir,
        { SCHEMATHESIS_HOOKS: join(dir, 'rota_hooks.py') },
      );
    const r = await fuzz(['--exclude-operation-id-regex', `^(${EXCLUDED.join('|')})$`]);
    const tail = r.out.slice(-8000);
    assert.equal(r.code, 0, tail);
    assert.match(r.out, new RegExp(`Tested: ${selected}\\b`), `every operation but ${EXCLUDED}: ${tail}`);
    // The stateful phase ran and followed the document's links (add a proxy, then use its id).
    assert.match(r.out, /✅ Stateful\b/, tail);
    const links = /API Links:\s+(\d+) covered/.exec(r.out);
    assert.ok(links && Number(links[1]) > 0, `the stateful phase followed links: ${tail}`);
    assert.doesNotMatch(r.out, /Schema validation mismatch/, 'the server accepts what the document allows');
    assert.doesNotMatch(r.out, /Missing test data/, 'the links lead to proxies that exist');
    // The policy routes on their own, last: what a random rule does to later calls is not theirs to judge.
    // Without links between them there is no stateful phase to run.
    const p = await fuzz([
      '--include-operation-id-regex',
      `^(${ALONE.join('|')})$`,
      '--phases',
      'examples,coverage,fuzzing',
    ]);
    assert.equal(p.code, 0, p.out.slice(-8000));
    assert.match(p.out, new RegExp(`Tested: ${ALONE.length}\\b`), p.out.slice(-8000));
    // The phases and the summary, for whoever reads the test output.
    t.diagnostic(
      r.out
        .slice(r.out.indexOf(' ✅  Examples'))
        .replace(/\n{2,}/g, '\n')
        .trim(),
    );
    // Log lines are written in batches: stop first, so that the exit flush has written them all.
    await server.stop();
    const errors = server
      .output()
      .split('\n')
      .filter((l) => l.includes('"level":50'));
    server = undefined;
    assert.deepEqual(errors, [], 'no unhandled error was logged');
  });
});
