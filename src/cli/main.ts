/**
 * `rota`, the operator's command line: `serve` runs the server (as `npm start` does); every other
 * command is a client of a running Rota at ROTA_URL (default http://127.0.0.1:8000), authenticated with
 * ROTA_API_KEY. It imports nothing of the server but for `serve`, and prints errors as `CODE: message`,
 * never a stack. Exit codes: 0 done, 1 partly done or refused (server error, invalid lines, failed
 * checks, Rota unreachable), 2 bad usage (commander's own errors included).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { checkProxies, showStatus } from './check.ts';
import { ApiClient, baseUrl, CliError, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE } from './client.ts';
import { importProxies } from './import.ts';
import { type Out, stdio } from './output.ts';
import { addProxy, exportProxies, listProxies, removeProxies } from './proxies.ts';

// The server's values, repeated here: the CLI must not import server code.
const STATUS_FILTERS = ['active', 'degraded', 'failed', 'healthy', 'unhealthy', 'unknown', 'dead'];
const PROTOCOLS = ['http', 'https', 'socks4', 'socks4a', 'socks5', 'socks5h'];

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

function integer(min: number, max: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min || n > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    }
    return n;
  };
}

function positive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || n > 1_000_000) throw new InvalidArgumentError('expected a number > 0');
  return n;
}

function country(v: string): string {
  if (!/^[A-Za-z]{2}$/.test(v)) throw new InvalidArgumentError('expected a two-letter country code');
  return v.toUpperCase();
}

const collect = (v: string, prev: string[] | undefined): string[] => [...(prev ?? []), v];

interface Globals {
  url: string;
  json?: boolean;
}

/** What every client command needs: the API client and the output mode. */
type Run = (api: ApiClient, json: boolean, out: Out) => Promise<number>;

function proxiesCommand(program: Command, run: (fn: Run) => Promise<void>): Command {
  const proxies = program.command('proxies').description('add, list, remove, import and export proxies');
  proxies
    .command('add')
    .description('add one proxy (credentials, if any, go in the URL: scheme://user:pass@host:port)')
    .argument('<url>', 'scheme://[user:pass@]host:port')
    .addOption(new Option('--country <cc>', 'ISO 3166-1 alpha-2 country').argParser(country))
    .addOption(new Option('--weight <n>', 'weight for the weighted strategy').argParser(positive))
    .addOption(new Option('--tag <tag>', 'a tag (repeatable)').argParser(collect))
    .action((url: string, o: { country?: string; weight?: number; tag?: string[] }) =>
      run((api, json, out) => addProxy(api, out, json, url, o)),
    );
  proxies
    .command('list')
    .description('list proxies, a page at a time')
    .addOption(new Option('--page <n>', 'page number').argParser(integer(1, 10_000_000)).default(1))
    .addOption(new Option('--page-size <n>', 'proxies per page').argParser(integer(1, 100)).default(50))
    .addOption(new Option('--status <status>', 'only proxies in this state').choices(STATUS_FILTERS))
    .action((o: { page: number; pageSize: number; status?: string }) =>
      run((api, json, out) => listProxies(api, out, json, o)),
    );
  proxies
    .command('rm')
    .description('remove proxies by id')
    .argument('<id...>', 'proxy ids')
    .action((ids: string[]) => run((api, json, out) => removeProxies(api, out, json, ids)));
  proxies
    .command('import')
    .description(
      'add every proxy of a file in one transaction (text: a proxy per line; NDJSON: .ndjson/.jsonl, ' +
        'or content starting with {, as `rota proxies export` writes it)',
    )
    .argument('<file>', 'a file, or - for standard input')
    .addOption(
      new Option('--protocol <scheme>', 'scheme of lines without one').choices(PROTOCOLS).default('http'),
    )
    .addOption(
      new Option('--format <format>', 'override the format guessed from the name or content').choices([
        'text',
        'ndjson',
      ]),
    )
    .action((file: string, o: { protocol: string; format?: 'text' | 'ndjson' }) =>
      run((api, json, out) => importProxies(api, out, json, file, o)),
    );
  proxies
    .command('export')
    .description('every proxy as NDJSON on standard output (streamed), as `rota proxies import` takes it')
    .addOption(new Option('--status <status>', 'only proxies in this state').choices(STATUS_FILTERS))
    .option(
      '--with-credentials',
      'include usernames, passwords and templates (a backup that restores; audit-logged)',
    )
    .action((o: { status?: string; withCredentials?: boolean }) =>
      run((api) => exportProxies(api, o.status, o.withCredentials === true)),
    );
  return proxies;
}

/** The whole command tree; `setCode` receives each command's exit code. */
export function buildProgram(out: Out, setCode: (code: number) => void): Command {
  const program = new Command('rota');
  program
    .description('Rota, the rotating proxy gateway: run it, or manage a running one over its REST API')
    .version(version())
    .addOption(
      new Option('--url <url>', 'the Rota API (env ROTA_URL); the API key comes from env ROTA_API_KEY')
        .env('ROTA_URL')
        .default('http://127.0.0.1:8000'),
    )
    .option('--json', 'print JSON for scripts instead of tables')
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({ outputError: (str, write) => write(str) })
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');

  const run = async (fn: Run): Promise<void> => {
    const g = program.opts<Globals>();
    setCode(await fn(new ApiClient(baseUrl(g.url), process.env.ROTA_API_KEY), g.json === true, out));
  };

  program
    .command('serve')
    .description('run the Rota server, configured by ROTA_* variables (as npm start does)')
    .action(serve);
  proxiesCommand(program, run);
  program
    .command('check')
    .description('health-check proxies (all by default); exit 1 when any failed')
    .argument('[id...]', 'only these proxy ids')
    .action((ids: string[]) => run((api, json, out) => checkProxies(api, out, json, ids)));
  program
    .command('status')
    .description('pool status, and the forward-proxy listeners')
    .action(() => run((api, json, out) => showStatus(api, out, json)));
  program
    .command('mcp')
    .description(
      'serve MCP (Model Context Protocol) on standard input/output for an AI client, over the Rota at ROTA_URL',
    )
    .action(async () => {
      // Loaded here only: no other command pays for the MCP SDK.
      const { runStdio } = await import('../mcp/stdio.ts');
      await runStdio(baseUrl(program.opts<Globals>().url), process.env.ROTA_API_KEY);
    });
  return program;
}

/**
 * What `npm start` runs: scripts/build.ts (the production bundle and the dashboard, rebuilt only when
 * stale; a production install without esbuild keeps what it was given), then the bundle, dist/main.js,
 * which adds Rota's runtime flags itself (src/runtime/node-flags.ts).
 */
async function serve(): Promise<void> {
  const root = new URL('../../', import.meta.url);
  const script = fileURLToPath(new URL('scripts/build.ts', root));
  if (existsSync(script)) {
    const build = spawnSync(process.execPath, [script], { stdio: 'inherit' });
    if (build.status !== 0) throw new CliError('BUILD_FAILED', 'scripts/build.ts failed (see above)');
  }
  await import(new URL('dist/main.js', root).href);
}

/** Runs the command line; resolves with the exit code. */
export async function main(argv: readonly string[], out: Out = stdio): Promise<number> {
  let code = EXIT_OK;
  const program = buildProgram(out, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv]);
    return code;
  } catch (err) {
    // Commander already printed its message (or the help): only the code is left to choose.
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    if (err instanceof CliError) {
      out.note(`${err.code}: ${err.message}`);
      return err.exitCode;
    }
    out.note(`ERROR: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT_PARTIAL;
  }
}

process.exitCode = await main(process.argv);
