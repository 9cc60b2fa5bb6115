/**
 * The live dashboard at /dashboard: one HTML page, its bundled script and style (web/, built by
 * dashboard-assets.ts), and its compact API (dashboard-api.ts). The page and its two assets are public so
 * that the page can ask for the API key; everything it reads or changes goes through the API with the
 * key. Nothing comes from elsewhere: the page's own policy allows scripts, styles and fetches from this
 * origin only, no inline code, and no HTML built from strings (Trusted Types).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.ts';
import { type Asset, DashboardAssets, type OutputName } from '../dashboard-assets.ts';
import { dashboardApiRoutes } from './dashboard-api.ts';

export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'";

const TYPES: Record<OutputName, string> = {
  'dashboard.html': 'text/html; charset=utf-8',
  'dashboard.js': 'application/javascript; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function unavailablePage(reason: string): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Rota dashboard unavailable</title>' +
    '</head><body><h1>Dashboard unavailable</h1>' +
    `<p>${escapeHtml(reason)}</p><p>The API is not affected.</p></body></html>\n`
  );
}

/** Sends a built asset: 304 for a matching ETag, gzip when the client takes it. */
function sendAsset(req: FastifyRequest, reply: FastifyReply, name: OutputName, a: Asset) {
  reply
    .type(TYPES[name])
    .header('etag', a.etag)
    .header('cache-control', 'no-cache')
    .header('vary', 'accept-encoding');
  if (req.headers['if-none-match'] === a.etag) return reply.code(304).send();
  const accepts = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  if (accepts) reply.header('content-encoding', 'gzip');
  return reply.send(accepts ? a.gzipped : a.raw);
}

export function dashboardRoutes(services: Services): FastifyPluginAsync {
  return async (app) => {
    const assets = new DashboardAssets();

    app.get('/dashboard', { schema: { hide: true } }, async (_req, reply) => {
      reply.header('content-security-policy', DASHBOARD_CSP).header('cache-control', 'no-store');
      reply.type('text/html; charset=utf-8');
      const bundle = await assets.current();
      if (!bundle.ok) return reply.code(503).send(unavailablePage(bundle.reason));
      // Whether to ask for the key before the first call: the same fact a 401 would reveal.
      const html = bundle.assets['dashboard.html'].raw.toString('utf8');
      return html.replace('{{AUTH_REQUIRED}}', String(services.config.requireAuth));
    });

    for (const name of ['dashboard.js', 'dashboard.css'] as const) {
      app.get(`/dashboard/${name}`, { schema: { hide: true } }, async (req, reply) => {
        const bundle = await assets.get();
        if (!bundle.ok) {
          reply.code(503).type('text/plain; charset=utf-8').header('retry-after', '10');
          return `${bundle.reason}\n`;
        }
        return sendAsset(req, reply, name, bundle.assets[name]);
      });
    }

    await app.register(dashboardApiRoutes(services), { prefix: '/api/v1' });
  };
}
