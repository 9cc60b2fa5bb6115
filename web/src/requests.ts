/**
 * The live request log: the newest calls from GET /api/v1/requests (this instance's), filtered by host,
 * proxy and outcome, refreshed with the live loop; a row opens its attempt timeline (each attempt's
 * proxy, outcome, status and latency, drawn to scale one after the other). And the busiest hosts from
 * GET /api/v1/hosts, refreshed with the table.
 */
import { type Api, describeError } from './api.ts';
import { byId, fmtInt, fmtNum, fmtRate, fmtTime, h, say } from './dom.ts';
import type { HostRow, RequestRecord, RequestsPage } from './types.ts';

const ROWS = 50;

function fmtBytes(n: number): string {
  if (n < 1024) return `${fmtInt(n)} B`;
  if (n < 1024 * 1024) return `${fmtNum(n / 1024)} KB`;
  return `${fmtNum(n / (1024 * 1024))} MB`;
}

function fmtMs(ms: number | null): string {
  if (ms === null) return '–';
  return ms >= 1000 ? `${fmtNum(ms / 1000)} s` : `${fmtNum(ms)} ms`;
}

function target(r: RequestRecord): string {
  const port = r.port === null ? '' : `:${r.port}`;
  return r.path === null ? `${r.host}${port}` : `${r.scheme ?? 'http'}://${r.host}${port}${r.path}`;
}

/** Each attempt as a bar as long as its latency, in the order they began. */
function timeline(r: RequestRecord): HTMLElement {
  const total = r.attempts.reduce((s, a) => s + a.latency_ms, 0) || 1;
  const items = r.attempts.map((a) => {
    const what = [a.outcome.replace('_', ' '), a.kind, a.status === null ? null : String(a.status)];
    const bar = h('span', { class: `bar outcome-${a.kind === 'banned' ? 'banned' : a.outcome}` });
    bar.style.width = `${Math.max(2, (a.latency_ms / total) * 100)}%`;
    return h(
      'li',
      {},
      h('span', { class: 'n' }, `#${a.attempt}`),
      h('span', { class: 'who', title: a.proxy_id }, a.proxy_label ?? `${a.proxy_id} (removed)`),
      h('span', { class: 'track' }, bar),
      h('span', { class: 'what' }, `${what.filter((x) => x).join(' · ')} · ${fmtMs(a.latency_ms)}`),
    );
  });
  const facts = [
    `door ${r.door}`,
    r.session_id === null ? null : `session ${r.session_id}`,
    r.rule === null ? null : `rule ${r.rule}`,
    `${fmtBytes(r.bytes_up)} up, ${fmtBytes(r.bytes_down)} down`,
    r.duration_ms === null ? 'still open' : `over after ${fmtMs(r.duration_ms)}`,
  ];
  return h(
    'div',
    { class: 'timeline' },
    h('p', { class: 'muted' }, facts.filter((x) => x).join(' · ')),
    items.length === 0
      ? h('p', {}, `No proxy was tried (${r.error_code ?? 'refused'}).`)
      : h('ol', {}, ...items),
  );
}

export class RequestLogPanel {
  readonly #api: Api;
  readonly #body = byId<HTMLTableSectionElement>('req-body');
  readonly #open = new Set<number>();
  #filters: Record<string, string> = {};
  /** While the pointer or focus is on the list, the live refresh leaves it still (rows do not move away). */
  #held = false;
  #shown = '';

  constructor(api: Api) {
    this.#api = api;
    const list = byId('req-table');
    list.addEventListener('mouseenter', () => {
      this.#held = true;
    });
    list.addEventListener('mouseleave', () => {
      this.#held = false;
    });
    const form = byId<HTMLFormElement>('req-filters');
    const read = () => {
      const v = (id: string) => byId<HTMLInputElement>(id).value.trim();
      this.#filters = { host: v('rf-host').toLowerCase(), proxy_id: v('rf-proxy'), outcome: v('rf-outcome') };
      void this.refresh(true);
    };
    form.addEventListener('change', read);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      read();
    });
    this.#body.addEventListener('click', (ev) => {
      const row = (ev.target as HTMLElement).closest('tr[data-id]');
      if (!row) return;
      const id = Number(row.getAttribute('data-id'));
      if (this.#open.has(id)) this.#open.delete(id);
      else this.#open.add(id);
      void this.refresh(true);
    });
  }

  /** The newest calls; `asked`: the user changed something (refreshed even while the list is held). */
  async refresh(asked = false): Promise<void> {
    if (this.#held && !asked) return;
    const params: Record<string, string | number> = { page_size: ROWS };
    for (const [k, v] of Object.entries(this.#filters)) if (v !== '') params[k] = v;
    const r = await this.#api.get<RequestsPage>('/api/v1/requests', params);
    if (!r.ok) return say('req-msg', `The request log could not be read: ${describeError(r)}`, true);
    say('req-msg', r.data.capacity === 0 ? 'The request log is off (ROTA_REQUEST_LOG_SIZE=0).' : '');
    const shown = `${r.data.items.map((x) => `${x.id}${x.open ? 'o' : ''}`).join()}|${[...this.#open].join()}`;
    if (shown === this.#shown) return;
    this.#shown = shown;
    const rows: HTMLTableRowElement[] = [];
    for (const rec of r.data.items) {
      rows.push(this.#row(rec));
      if (this.#open.has(rec.id)) {
        const cell = h('td', { colspan: '8' }, timeline(rec));
        rows.push(h('tr', { class: 'detail' }, cell));
      }
    }
    this.#body.replaceChildren(...rows);
    byId('req-empty').hidden = rows.length > 0;
  }

  #row(r: RequestRecord): HTMLTableRowElement {
    const open = this.#open.has(r.id);
    return h(
      'tr',
      {
        'data-id': String(r.id),
        class: `req outcome-${r.outcome}`,
        'aria-expanded': String(open),
        tabindex: '0',
      },
      h('td', {}, fmtTime(Date.parse(r.time))),
      h('td', { class: 'opt' }, r.door),
      h('td', { class: 'opt' }, r.method),
      h('td', { class: 'target', title: target(r) }, target(r)),
      h('td', { class: 'num' }, r.status === null ? '–' : String(r.status)),
      h(
        'td',
        {},
        h(
          'span',
          { class: `badge outcome-${r.outcome}` },
          r.ban_seen ? `${r.outcome} · ban seen` : r.outcome,
        ),
      ),
      h('td', { class: 'num opt' }, String(r.attempts.length)),
      h('td', { class: 'num' }, fmtMs(r.latency_ms)),
    );
  }
}

export class HostsPanel {
  readonly #api: Api;
  readonly #body = byId<HTMLTableSectionElement>('hosts-body');

  constructor(api: Api) {
    this.#api = api;
  }

  async refresh(): Promise<void> {
    const r = await this.#api.get<{ items: HostRow[] }>('/api/v1/hosts', { limit: 20 });
    if (!r.ok) return say('hosts-msg', `The hosts could not be read: ${describeError(r)}`, true);
    say('hosts-msg', '');
    const rows = r.data.items.map((x) => {
      const hr = x.last_1h;
      return h(
        'tr',
        {},
        h('th', { scope: 'row', class: 'target' }, x.host),
        h('td', { class: 'num opt' }, fmtInt(x.last_15m.requests)),
        h('td', { class: 'num' }, fmtInt(hr.requests)),
        h('td', { class: 'num' }, fmtRate(hr.success_rate)),
        h('td', { class: 'num' }, fmtInt(hr.bans)),
        h('td', { class: 'num opt' }, `${fmtMs(hr.p50_ms)} / ${fmtMs(hr.p95_ms)}`),
        h('td', { class: 'num opt' }, fmtBytes(hr.bytes)),
        h('td', { class: 'num' }, fmtInt(x.cooling_down)),
      );
    });
    this.#body.replaceChildren(...rows);
    byId('hosts-empty').hidden = rows.length > 0;
  }
}
