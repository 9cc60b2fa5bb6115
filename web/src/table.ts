/**
 * The pool table: one page at a time from GET /api/v1/dashboard/proxies, sorted, filtered and paged by
 * the server, so 100,000 proxies cost the page no more than 50. Sorting is by the header buttons (mouse
 * or keyboard); each row can reset its breaker or be removed (a second click confirms).
 */
import { type Api, describeError } from './api.ts';
import { byId, fmtInt, fmtNum, fmtRate, h, say, shortId } from './dom.ts';
import type { Row, TablePage } from './types.ts';

const CONFIRM_MS = 4_000;
const DEBOUNCE_MS = 250;

interface Query {
  page: number;
  page_size: number;
  sort: string;
  order: 'asc' | 'desc';
  q: string;
  breaker: string;
  health: string;
}

export class PoolTable {
  readonly #api: Api;
  readonly #body = byId<HTMLTableSectionElement>('pool-body');
  readonly #query: Query = {
    page: 1,
    page_size: 50,
    sort: 'created',
    order: 'asc',
    q: '',
    breaker: '',
    health: '',
  };
  #seq = 0;
  #last: TablePage | null = null;
  #inFlight = false;
  /** Rows whose Remove was clicked once: id → when the offer lapses. */
  readonly #confirming = new Map<string, number>();
  #debounce: number | undefined;

  constructor(api: Api) {
    this.#api = api;
    this.#wireHeaders();
    this.#wireFilters();
    this.#wirePager();
    this.#body.addEventListener('click', (ev) => {
      const btn = (ev.target as Element).closest<HTMLButtonElement>('button[data-action]');
      const id = btn?.closest('tr')?.dataset.id;
      if (btn && id) void this.#act(btn.dataset.action ?? '', id);
    });
  }

  /** Fetches the current page; overlapping calls are skipped unless `force` (a user's change). */
  async refresh(force = false): Promise<void> {
    if (this.#inFlight && !force) return;
    const seq = ++this.#seq;
    this.#inFlight = true;
    const q = this.#query;
    const r = await this.#api.get<TablePage>('/api/v1/dashboard/proxies', {
      ...q,
      q: q.q.trim() || undefined,
      breaker: q.breaker || undefined,
      health: q.health || undefined,
    });
    if (seq === this.#seq) this.#inFlight = false;
    if (seq !== this.#seq) return; // a newer request was made meanwhile
    if (!r.ok) {
      if (r.status !== 401) say('pool-msg', `The table could not be refreshed: ${describeError(r)}`, true);
      return;
    }
    const lastPage = Math.max(1, Math.ceil(r.data.total / q.page_size));
    if (r.data.items.length === 0 && q.page > lastPage) {
      q.page = lastPage;
      return this.refresh(true);
    }
    this.#last = r.data;
    this.#render(r.data);
  }

  #render(p: TablePage): void {
    const active = document.activeElement;
    const focus =
      active instanceof HTMLButtonElement && this.#body.contains(active)
        ? { action: active.dataset.action, id: active.closest('tr')?.dataset.id }
        : null;
    const now = Date.now();
    for (const [id, until] of this.#confirming) if (until < now) this.#confirming.delete(id);
    this.#body.replaceChildren(...p.items.map((row) => this.#row(row)));
    if (p.items.length === 0) {
      this.#body.append(h('tr', {}, h('td', { colspan: '10', class: 'muted' }, 'No proxy matches.')));
    }
    if (focus?.id) {
      const sel = `tr[data-id="${CSS.escape(focus.id)}"] button[data-action="${focus.action ?? ''}"]`;
      this.#body.querySelector<HTMLButtonElement>(sel)?.focus();
    }
    const pages = Math.max(1, Math.ceil(p.total / p.page_size));
    const filtered = p.total === p.pool_size ? '' : ` · ${fmtInt(p.total)} matching`;
    byId('pg-info').textContent =
      `Page ${p.page} of ${fmtInt(pages)}${filtered} · ${fmtInt(p.pool_size)} in the pool`;
    byId<HTMLButtonElement>('pg-first').disabled = p.page <= 1;
    byId<HTMLButtonElement>('pg-prev').disabled = p.page <= 1;
    byId<HTMLButtonElement>('pg-next').disabled = !p.has_next;
    byId<HTMLButtonElement>('pg-last').disabled = !p.has_next;
  }

  #row(r: Row): HTMLTableRowElement {
    const confirming = this.#confirming.has(r.id);
    const remove = h(
      'button',
      {
        type: 'button',
        'data-action': 'remove',
        class: confirming ? 'danger' : 'secondary',
        'aria-label': confirming ? `Confirm removing ${r.url}` : `Remove ${r.url}`,
      },
      confirming ? 'Confirm remove' : 'Remove',
    );
    const cell = (label: string, cls: string, ...content: (Node | string)[]) =>
      h('td', { class: cls, 'data-label': label }, ...content);
    const reset = h(
      'button',
      {
        type: 'button',
        'data-action': 'reset',
        class: 'secondary',
        'aria-label': `Reset breaker of ${r.url}`,
      },
      'Reset breaker',
    );
    return h(
      'tr',
      { 'data-id': r.id },
      cell('ID', 'opt', h('code', { title: r.id }, shortId(r.id))),
      h(
        'th',
        { scope: 'row', class: 'url' },
        r.url,
        r.label === null ? null : h('span', { class: 'proxy-label' }, ` ${r.label}`),
      ),
      cell('Protocol', 'opt', r.protocol),
      cell('Country', '', r.country ?? '–'),
      cell('Health', '', h('span', { class: `badge health-${r.health}` }, r.health)),
      cell('Breaker', '', h('span', { class: `badge breaker-${r.breaker}` }, r.breaker)),
      cell(
        'Success',
        'num',
        h('span', { title: `of ${fmtInt(r.requests)} requests` }, fmtRate(r.success_rate)),
      ),
      cell('p50 ms', 'num', fmtNum(r.p50_ms)),
      cell('In flight', 'num opt', fmtInt(r.in_flight)),
      cell('', 'actions', reset, remove),
    );
  }

  async #act(action: string, id: string): Promise<void> {
    const row = this.#last?.items.find((x) => x.id === id);
    const name = row?.url ?? id;
    if (action === 'reset') {
      const r = await this.#api.send('POST', `/api/v1/circuit-breakers/${encodeURIComponent(id)}/reset`);
      say(
        'pool-msg',
        r.ok ? `Breaker of ${name} reset: closed.` : `Reset failed: ${describeError(r)}`,
        !r.ok,
      );
    } else if (action === 'remove') {
      if (!this.#confirming.has(id)) {
        this.#confirming.set(id, Date.now() + CONFIRM_MS);
        if (this.#last) this.#render(this.#last);
        say('pool-msg', `Click "Confirm remove" to remove ${name}.`);
        return;
      }
      this.#confirming.delete(id);
      const r = await this.#api.send('DELETE', `/api/v1/proxies/${encodeURIComponent(id)}`);
      say('pool-msg', r.ok ? `Removed ${name}.` : `Remove failed: ${describeError(r)}`, !r.ok);
    }
    await this.refresh(true);
  }

  #wireHeaders(): void {
    for (const th of document.querySelectorAll<HTMLTableCellElement>('#pool-table th[data-sort]')) {
      th.querySelector('button')?.addEventListener('click', () => {
        const key = th.dataset.sort ?? 'created';
        const q = this.#query;
        // Ascending, then descending, then back to the pool's own order.
        if (q.sort !== key) Object.assign(q, { sort: key, order: 'asc' });
        else if (q.order === 'asc') q.order = 'desc';
        else Object.assign(q, { sort: 'created', order: 'asc' });
        q.page = 1;
        this.#showSort();
        void this.refresh(true);
      });
    }
  }

  #showSort(): void {
    for (const th of document.querySelectorAll<HTMLTableCellElement>('#pool-table th[data-sort]')) {
      if (th.dataset.sort === this.#query.sort) {
        th.setAttribute('aria-sort', this.#query.order === 'asc' ? 'ascending' : 'descending');
      } else th.removeAttribute('aria-sort');
    }
  }

  #wireFilters(): void {
    const form = byId<HTMLFormElement>('filters');
    form.addEventListener('submit', (ev) => ev.preventDefault());
    const apply = () => {
      const q = this.#query;
      q.q = byId<HTMLInputElement>('f-q').value;
      q.breaker = byId<HTMLSelectElement>('f-breaker').value;
      q.health = byId<HTMLSelectElement>('f-health').value;
      q.page_size = Number(byId<HTMLSelectElement>('f-size').value) || 50;
      q.page = 1;
      void this.refresh(true);
    };
    byId('f-q').addEventListener('input', () => {
      window.clearTimeout(this.#debounce);
      this.#debounce = window.setTimeout(apply, DEBOUNCE_MS);
    });
    for (const id of ['f-breaker', 'f-health', 'f-size']) byId(id).addEventListener('change', apply);
  }

  #wirePager(): void {
    const go = (page: (current: number, last: number) => number) => () => {
      const total = this.#last?.total ?? 0;
      const last = Math.max(1, Math.ceil(total / this.#query.page_size));
      this.#query.page = Math.min(last, Math.max(1, page(this.#query.page, last)));
      void this.refresh(true);
    };
    byId('pg-first').addEventListener(
      'click',
      go(() => 1),
    );
    byId('pg-prev').addEventListener(
      'click',
      go((p) => p - 1),
    );
    byId('pg-next').addEventListener(
      'click',
      go((p) => p + 1),
    );
    byId('pg-last').addEventListener(
      'click',
      go((_p, last) => last),
    );
  }
}
