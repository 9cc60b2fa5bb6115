/**
 * Small DOM and formatting helpers. Text always goes in through textContent: nothing the server sends
 * is ever parsed as HTML (the page's policy forbids it anyway, with Trusted Types).
 */

export function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
}

type Child = Node | string | null;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) if (c !== null) el.append(c);
  return el;
}

export function setText(id: string, text: string): void {
  byId(id).textContent = text;
}

/** Shows a message beside a control; `error` styles it as one. */
export function say(id: string, text: string, error = false): void {
  const el = byId(id);
  el.textContent = text;
  el.classList.toggle('error', error);
}

const intFmt = new Intl.NumberFormat('en-US');
const oneDecimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

export const fmtInt = (n: number): string => intFmt.format(n);
export const fmtNum = (n: number | null): string => (n === null ? '–' : oneDecimal.format(n));
export const fmtRate = (r: number | null): string => (r === null ? '–' : `${oneDecimal.format(r * 100)}%`);

export function fmtTime(ms: number): string {
  return new Date(ms).toLocaleTimeString('en-GB', { hour12: false });
}

/** `http://…` stays; an id is shortened for display (the full one is in a title). */
export const shortId = (id: string): string => id.slice(0, 8);
