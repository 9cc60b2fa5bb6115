/**
 * The control panel: switch the rotation strategy (PUT config), add one proxy (POST proxies) and import a
 * list (POST proxies/import as text/plain when the server has it, else one POST proxies per line). What
 * the user typed is never echoed back: a proxy URL may hold a password. Answers name the proxy by the
 * credential-free URL the server returns.
 */
import { type Api, describeError, type Result } from './api.ts';
import { byId, fmtInt, say } from './dom.ts';
import type { ImportSummary, Info, ProxyCreated } from './types.ts';

export interface ControlHooks {
  /** The pool changed: refresh the table now. */
  changed(): void;
}

export class Controls {
  readonly #api: Api;
  readonly #hooks: ControlHooks;
  readonly #strategy = byId<HTMLSelectElement>('strategy');
  #bulkImport: boolean;
  /** The user picked a strategy not yet applied: live updates must not overwrite the choice. */
  #dirty = false;

  constructor(api: Api, info: Info, hooks: ControlHooks) {
    this.#api = api;
    this.#hooks = hooks;
    this.#bulkImport = info.bulk_import;
    this.#strategy.replaceChildren(...info.strategies.map((s) => new Option(s, s)));
    this.#strategy.value = info.strategy;
    this.#strategy.addEventListener('change', () => {
      this.#dirty = true;
    });
    this.#onSubmit('strategy-form', () => this.#switchStrategy());
    this.#onSubmit('add-form', () => this.#add());
    this.#onSubmit('import-form', () => this.#import());
  }

  /** The strategy as the server has it now (someone else may have changed it). */
  showStrategy(strategy: string): void {
    if (!this.#dirty && document.activeElement !== this.#strategy) this.#strategy.value = strategy;
  }

  #onSubmit(id: string, run: () => Promise<void>): void {
    const form = byId<HTMLFormElement>(id);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const button = form.querySelector<HTMLButtonElement>('button[type="submit"]');
      if (button?.disabled) return;
      if (button) button.disabled = true;
      void run().finally(() => {
        if (button) button.disabled = false;
      });
    });
  }

  async #switchStrategy(): Promise<void> {
    const wanted = this.#strategy.value;
    const r = await this.#api.send<{ rotation_strategy: string }>('PUT', '/api/v1/config', {
      rotation_strategy: wanted,
    });
    if (r.ok) {
      this.#dirty = false;
      say('strategy-msg', `Rotation strategy is now ${r.data.rotation_strategy}.`);
    } else say('strategy-msg', `Not switched: ${describeError(r)}`, true);
  }

  async #add(): Promise<void> {
    const url = byId<HTMLInputElement>('add-url');
    const country = byId<HTMLInputElement>('add-country');
    if (url.value.trim() === '') {
      say('add-msg', 'Enter a proxy URL, e.g. http://host:3128.', true);
      url.focus();
      return;
    }
    const body: Record<string, string> = { url: url.value.trim() };
    if (country.value.trim() !== '') body.country = country.value.trim();
    const r = await this.#api.send<ProxyCreated>('POST', '/api/v1/proxies', body);
    if (!r.ok) return say('add-msg', `Not added: ${describeError(r)}`, true);
    url.value = '';
    country.value = '';
    say('add-msg', `Added ${r.data.url}.`);
    this.#hooks.changed();
  }

  async #import(): Promise<void> {
    const area = byId<HTMLTextAreaElement>('import-text');
    const lines = area.value.split(/\r?\n/).map((l) => l.trim());
    if (!lines.some((l) => l !== '' && !l.startsWith('#'))) {
      say('import-msg', 'Paste at least one proxy, one per line.', true);
      return;
    }
    say('import-msg', 'Importing…');
    const summary = this.#bulkImport ? await this.#importBulk(area.value) : await this.#importEach(lines);
    if (summary === null) return;
    const invalid = summary.invalid
      .slice(0, 3)
      .map((i) => `line ${i.line}: ${i.reason}`)
      .join('; ');
    say(
      'import-msg',
      `Imported ${fmtInt(summary.created)}, ${fmtInt(summary.duplicates)} already present, ` +
        `${fmtInt(summary.invalid_count)} invalid${invalid ? ` (${invalid})` : ''}.`,
      summary.invalid_count > 0 && summary.created === 0,
    );
    if (summary.invalid_count === 0) area.value = '';
    this.#hooks.changed();
  }

  async #importBulk(text: string): Promise<ImportSummary | null> {
    const r = await this.#api.sendText<ImportSummary>('/api/v1/proxies/import', text);
    if (r.ok) return r.data;
    if (r.status === 404) {
      // The server lost the route (an older Rota behind the same address): one call per line then.
      this.#bulkImport = false;
      return this.#importEach(text.split(/\r?\n/).map((l) => l.trim()));
    }
    say('import-msg', `Not imported: ${describeError(r)}`, true);
    return null;
  }

  /** One POST proxies per line, in order, waiting out rate limits; lines need a scheme here. */
  async #importEach(lines: string[]): Promise<ImportSummary> {
    const s: ImportSummary = { created: 0, duplicates: 0, invalid: [], invalid_count: 0 };
    const todo = lines
      .map((l, i) => ({ line: i + 1, text: l }))
      .filter((l) => l.text !== '' && !l.text.startsWith('#'));
    for (const [n, item] of todo.entries()) {
      say('import-msg', `Importing ${n + 1} of ${todo.length}…`);
      let r: Result<ProxyCreated>;
      for (;;) {
        r = await this.#api.send<ProxyCreated>('POST', '/api/v1/proxies', { url: item.text });
        if (r.ok || r.status !== 429) break;
        say('import-msg', `Rate limited at ${n + 1} of ${todo.length}: waiting ${r.retryAfterS ?? 5} s…`);
        await new Promise((done) => setTimeout(done, (r.ok ? 0 : (r.retryAfterS ?? 5)) * 1000));
      }
      if (r.ok) s.created++;
      else if (r.status === 409) s.duplicates++;
      else {
        s.invalid_count++;
        if (s.invalid.length < 20) s.invalid.push({ line: item.line, reason: r.message });
      }
    }
    return s;
  }
}
