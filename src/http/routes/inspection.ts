import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { DetailItem } from '../../errors/rota-error.ts';
import type { CaOrigin } from '../../inspect/authority.ts';
import { normalizePatterns } from '../../inspect/patterns.ts';
import type { InspectionLists, InspectionSettings } from '../../inspect/settings.ts';
import { Envelope, errorResponses, STORAGE_UNAVAILABLE } from '../../schemas/common.ts';
import {
  InspectionUpdate,
  type InspectionUpdateT,
  InspectionView,
  type InspectionViewT,
} from '../../schemas/inspection.ts';
import type { Services } from '../../services.ts';
import { ok } from '../envelope.ts';
import { invalidConfig, isRecord, item, schemaProblems } from '../problems.ts';
import { routeLimit } from '../rate-limit.ts';

/**
 * HTTPS inspection's settings and its CA certificate: which tunnels are inspected (`hosts`,
 * `passthrough`; persisted and shared like the ban policy) and the CA clients must trust to be inspected.
 */

/** What the routes need of the CA: its certificate, never its key. */
export interface CaSource {
  readonly origin: CaOrigin | null;
  caPem(): Promise<string>;
}

export interface InspectionRouteDeps {
  readonly settings: InspectionSettings;
  readonly authority: CaSource;
}

const LISTS = ['hosts', 'passthrough'] as const;

function view(d: InspectionRouteDeps): InspectionViewT {
  return { ...d.settings.get(), hosts_source: d.settings.hostsSource, ca_origin: d.authority.origin };
}

/** The patterns the schema let through, checked one by one: every bad one, with its place. */
function patternProblems(body: unknown, schemaItems: DetailItem[]): DetailItem[] {
  if (!isRecord(body)) return [];
  const out: DetailItem[] = [];
  for (const field of LISTS) {
    const list = body[field];
    if (!Array.isArray(list) || schemaItems.some((d) => d.loc[1] === field && d.loc.length === 2)) continue;
    list.forEach((p: unknown, i) => {
      if (typeof p !== 'string' || schemaItems.some((d) => d.loc[1] === field && d.loc[2] === i)) return;
      const r = normalizePatterns([p]);
      if (!r.ok) out.push(item([field, i], r.problems[0]?.reason ?? 'not a host pattern', p));
    });
  }
  return out;
}

/** The lists of a valid body in canonical form (lower case, no trailing dot, no duplicates). */
function canonical(body: InspectionUpdateT): Partial<InspectionLists> {
  const out: Partial<InspectionLists> = {};
  for (const field of LISTS) {
    const list = body[field];
    if (list === undefined) continue;
    const r = normalizePatterns(list);
    if (r.ok) out[field] = r.patterns;
  }
  return out;
}

const PEM_TYPE = 'application/x-pem-file';

export function inspectionRoutes(services: Services, d: InspectionRouteDeps): FastifyPluginAsync {
  return async (app) => {
    app.get(
      '/inspection',
      {
        schema: {
          tags: ['inspection'],
          summary: 'Which CONNECT tunnels HTTPS inspection terminates',
          description:
            'A tunnel is inspected when `passthrough` does not name its host and either the client asked ' +
            '(`-inspect-on` in the proxy username) or `hosts` names it and the client did not refuse ' +
            '(`-inspect-off`).',
          response: { 200: Envelope(InspectionView), ...errorResponses() },
        },
      },
      async (req) => ok(req, view(d)),
    );

    app.put<{ Body: InspectionUpdateT }>(
      '/inspection',
      {
        attachValidation: true,
        config: {
          validation: 'config',
          audit: 'inspection.update',
          rateLimit: routeLimit('config', services.config, services.settings),
        },
        schema: {
          tags: ['inspection'],
          summary: 'Change which tunnels are inspected (partial: a list given replaces that list)',
          description:
            'Every invalid pattern is reported (400 INVALID_CONFIGURATION, `loc` naming the list and the ' +
            'index) and then nothing is changed. Patterns are kept in canonical form (lower case, no ' +
            'trailing dot, IPv6 compressed, duplicates dropped); the change is kept across restarts and ' +
            'applies to tunnels opened after it, on every instance.',
          body: InspectionUpdate,
          response: {
            200: Envelope(InspectionView),
            ...errorResponses(400, 413, 415, 422, STORAGE_UNAVAILABLE),
          },
        },
      },
      async (req) => {
        const fromSchema = schemaProblems(req);
        const problems = [...fromSchema, ...patternProblems(req.body, fromSchema)];
        if (problems.length > 0) throw invalidConfig(problems);
        await d.settings.update(canonical(req.body));
        if (services.store.backend !== 'memory') services.settings.markStored();
        return ok(req, view(d));
      },
    );

    app.get(
      '/inspection/ca.pem',
      {
        schema: {
          tags: ['inspection'],
          summary: "The inspection CA's certificate (PEM), for clients to trust",
          description:
            'The certificate that signs the certificates of inspected hosts, with any intermediates of the ' +
            "operator's CA file. Never the key. The CA is loaded, or made, on the first request.",
          produces: [PEM_TYPE],
          response: {
            200: {
              description: 'The CA certificate chain, PEM',
              content: { [PEM_TYPE]: { schema: Type.String() } },
            },
            ...errorResponses(STORAGE_UNAVAILABLE),
          },
        },
      },
      async (_req, reply) => {
        const pem = await d.authority.caPem();
        reply
          .type(PEM_TYPE)
          .header('content-disposition', 'attachment; filename="rota-ca.pem"')
          .header('cache-control', 'no-cache');
        return pem;
      },
    );
  };
}
