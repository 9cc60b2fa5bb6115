/**
 * The dashboard's entry point: asks for the API key when Rota requires one, then runs two loops, `live`
 * every second (charts, summary, events) and the table every few seconds, paused while the tab is
 * hidden. A 401 at any time stops both and asks for the key again; a 429 waits as long as Rota says.
 */
import { Api, describeError } from './api.ts';
import { Charts } from './charts.ts';
import { Controls } from './controls.ts';
import { byId, fmtInt, fmtNum, fmtTime, say, setText } from './dom.ts';
import { EventFeed } from './events.ts';
import { HostsPanel, RequestLogPanel } from './requests.ts';
import { PoolTable } from './table.ts';
import type { Info, Live } from './types.ts';

/** Calls `run` again after the delay it returns; parks while the tab is hidden. */
class Loop {
  readonly #run: () => Promise<number>;
  #timer: number | undefined;
  #running = false;
  #stopped = true;

  constructor(run: () => Promise<number>) {
    this.#run = run;
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) this.kick();
    });
  }

  start(): void {
    this.#stopped = false;
    this.kick();
  }

  stop(): void {
    this.#stopped = true;
    window.clearTimeout(this.#timer);
  }

  /** Runs now unless it is running already. */
  kick(): void {
    window.clearTimeout(this.#timer);
    if (!this.#running && !this.#stopped) void this.#tick();
  }

  async #tick(): Promise<void> {
    if (document.hidden || this.#stopped) return;
    this.#running = true;
    let delay = 5_000;
    try {
      delay = await this.#run();
    } finally {
      this.#running = false;
    }
    if (!this.#stopped) this.#timer = window.setTimeout(() => void this.#tick(), delay);
  }
}

function showSummary(live: Live, charts: Charts): void {
  const p = live.pool;
  setText('s-total', fmtInt(p.total));
  // A share of the proxies whose health is known: a pool never checked is not "all healthy".
  setText('s-healthy', p.checked === 0 ? 'none checked' : `${fmtInt(p.healthy)} of ${fmtInt(p.checked)}`);
  setText('s-open', fmtInt(p.breakers.open));
  setText('s-half', fmtInt(p.breakers.half_open));
  setText('s-inflight', fmtInt(p.in_flight));
  setText('s-bans', fmtInt(live.bans.active));
  const last = charts.latest();
  setText('s-rps', fmtNum(last?.requests ?? null));
  setText('s-eps', fmtNum(last?.errors ?? null));
  byId('s-open').classList.toggle('alert', p.breakers.open > 0);
}

function start(api: Api, info: Info): void {
  byId('main').hidden = false;
  byId('forget-key').hidden = !info.auth_enabled;
  const charts = new Charts(byId('chart-rate'), byId('chart-latency'), info.series_window_s);
  const span = byId<HTMLSelectElement>('chart-window');
  span.addEventListener('change', () => charts.setWindow(Number(span.value)));
  const feed = new EventFeed();
  const table = new PoolTable(api);
  const requests = new RequestLogPanel(api);
  const hosts = new HostsPanel(api);
  const tableLoop = new Loop(async () => {
    await Promise.all([table.refresh(), hosts.refresh()]);
    return info.table_poll_ms;
  });
  const controls = new Controls(api, info, { changed: () => tableLoop.kick() });
  const liveLoop = new Loop(async () => {
    const r = await api.get<Live>('/api/v1/dashboard/live', {
      since: charts.lastT,
      events_since: feed.cursor,
    });
    if (!r.ok) {
      if (r.status !== 401) setText('conn', `Connection problem: ${describeError(r)} Retrying…`);
      return (r.retryAfterS ?? 3) * 1000;
    }
    charts.append(r.data.series);
    showSummary(r.data, charts);
    await requests.refresh();
    controls.showStrategy(r.data.strategy);
    if (feed.update(r.data)) tableLoop.kick();
    setText('conn', `Live · updated ${fmtTime(r.data.now)}`);
    return info.live_poll_ms;
  });
  api.setHooks({
    unauthorized: () => {
      liveLoop.stop();
      tableLoop.stop();
      setText('conn', 'Paused: the API key was refused.');
      askKey(api, 'The API key was refused (401). Enter it again.', () => {
        liveLoop.start();
        tableLoop.start();
      });
    },
  });
  liveLoop.start();
  tableLoop.start();
}

/** Shows the key form; `onOk` runs once a key is accepted (and kept for this tab). */
function askKey(api: Api, message: string, onOk: (info: Info) => void): void {
  const panel = byId('auth');
  const input = byId<HTMLInputElement>('api-key');
  const form = byId<HTMLFormElement>('auth-form');
  panel.hidden = false;
  say('auth-error', message, message !== '');
  input.focus();
  form.onsubmit = (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (key === '') return say('auth-error', 'Enter the API key.', true);
    api.useKey(key);
    void api.check<Info>('/api/v1/dashboard/info').then((r) => {
      if (r.ok) {
        api.remember();
        input.value = '';
        say('auth-error', '');
        panel.hidden = true;
        form.onsubmit = null;
        onOk(r.data);
        return;
      }
      api.useKey(null);
      input.select();
      say(
        'auth-error',
        r.status === 401
          ? 'Wrong API key: Rota refused it (401 Unauthorized). Check the key and try again.'
          : `The key could not be checked: ${describeError(r)}`,
        true,
      );
    });
  };
}

async function boot(api: Api): Promise<void> {
  const authRequired = document.body.dataset.authRequired === 'true';
  if (authRequired && !api.hasKey) {
    setText('conn', 'Waiting for the API key.');
    return askKey(api, '', (info) => start(api, info));
  }
  const r = await api.get<Info>('/api/v1/dashboard/info');
  if (r.ok) return start(api, r.data);
  if (r.status === 401) {
    api.forget();
    setText('conn', 'Waiting for the API key.');
    return askKey(api, 'The saved API key was refused (401). Enter it again.', (info) => start(api, info));
  }
  setText('conn', `Rota did not start the dashboard: ${describeError(r)} Retrying in 5 s…`);
  window.setTimeout(() => void boot(api), 5_000);
}

const api = new Api();
byId('forget-key').addEventListener('click', () => {
  api.forget();
  window.location.reload();
});
void boot(api);
