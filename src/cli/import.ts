/**
 * `rota proxies import FILE|-`: one call of the bulk endpoint (one transaction, one rate-limit unit),
 * text or NDJSON (by the file's extension, or --format). On a terminal, a bar shows the upload.
 */
import { readFile } from 'node:fs/promises';
import { type ApiClient, CliError, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE } from './client.ts';
import { type Out, printTable, progress } from './output.ts';

interface Summary {
  created: number;
  duplicates: number;
  invalid: { line: number; reason: string }[];
  invalid_count?: number;
}

export interface ImportOptions {
  protocol: string;
  format?: 'text' | 'ndjson';
}

const CHUNK = 64 * 1024;

async function readInput(file: string): Promise<Buffer> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }
  try {
    return await readFile(file);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw new CliError('FILE_UNREADABLE', `cannot read ${file} (${String(code ?? 'error')})`, EXIT_USAGE);
  }
}

/** The file as a stream of chunks; each chunk taken by fetch moves the bar. */
function upload(data: Buffer): { stream: ReadableStream<Uint8Array>; done(): void } {
  const bar = progress('Uploading', data.length, 'bytes');
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= data.length) {
        controller.close();
        return;
      }
      const chunk = data.subarray(sent, sent + CHUNK);
      sent += chunk.length;
      controller.enqueue(chunk);
      bar.update(sent);
    },
  });
  return { stream, done: () => bar.stop() };
}

/** Cut while sending: the server answered early (a 413) and closed, or went away. */
const CUT = new Set(['EPIPE', 'ECONNRESET', 'UND_ERR_SOCKET']);

/**
 * On a terminal the body is streamed, so that the bar follows the upload. A streamed body cut by an early
 * answer (413: too large) loses that answer, so then the whole body is sent once more, which undici
 * reads the answer of. Elsewhere the body is sent whole at once.
 */
async function post(api: ApiClient, path: string, data: Buffer, type: string): Promise<Summary> {
  if (!process.stderr.isTTY) return (await api.call<Summary>('POST', path, { body: { data, type } })).data;
  const { stream, done } = upload(data);
  try {
    return (await api.call<Summary>('POST', path, { body: { data: stream, type } })).data;
  } catch (err) {
    if (!(err instanceof CliError) || !CUT.has(err.netCode ?? '')) throw err;
  } finally {
    done();
  }
  return (await api.call<Summary>('POST', path, { body: { data, type } })).data;
}

/** NDJSON by the file's extension, or by its first character (`{`: what `rota proxies export` writes). */
function guessFormat(file: string, data: Buffer): 'text' | 'ndjson' {
  if (/\.(ndjson|jsonl)$/i.test(file)) return 'ndjson';
  const head = data
    .subarray(0, 1024)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart();
  return head.startsWith('{') ? 'ndjson' : 'text';
}

export async function importProxies(api: ApiClient, out: Out, json: boolean, file: string, o: ImportOptions) {
  const data = await readInput(file);
  const format = o.format ?? guessFormat(file, data);
  const type = format === 'ndjson' ? 'application/x-ndjson' : 'text/plain; charset=utf-8';
  const q = new URLSearchParams({ protocol: o.protocol });
  const summary = await post(api, `/api/v1/proxies/import?${q}`, data, type);
  const invalidCount = summary.invalid_count ?? summary.invalid.length;
  if (json) out.json(summary);
  else {
    out.line(`created ${summary.created}, duplicates ${summary.duplicates}, invalid ${invalidCount}`);
    if (summary.invalid.length > 0) {
      printTable(
        out,
        ['LINE', 'REASON'],
        summary.invalid.map((i) => [i.line, i.reason]),
      );
      const more = invalidCount - summary.invalid.length;
      if (more > 0) out.line(`... and ${more} more invalid lines`);
    }
  }
  return invalidCount > 0 ? EXIT_PARTIAL : EXIT_OK;
}
