import { type Static, Type } from 'typebox';

/** A host as Rota keys cool-downs: a lower-case name or IP address, no port, no brackets. */
export const BAN_HOST_PATTERN = '^[A-Za-z0-9._:-]{1,253}$';

/** `GET bans` (and the MCP tool bans, action list). */
export const BansQuery = Type.Object(
  {
    host: Type.Optional(
      Type.String({ pattern: BAN_HOST_PATTERN, description: 'Only this host (lower case, no port)' }),
    ),
    page: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 1 }),
    page_size: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
  },
  { additionalProperties: false },
);
export type BansQueryT = Static<typeof BansQuery>;

/** `POST bans` (and the MCP tool bans, action report): a ban the client saw. */
export const BanReportBody = Type.Object(
  {
    proxy_id: Type.String({ format: 'uuid' }),
    host: Type.String({ pattern: BAN_HOST_PATTERN, description: 'The target host that banned it (no port)' }),
    cooldown_s: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 604_800,
        description: "The first cool-down (default: the ban policy's cooldown_s); at most max_cooldown_s",
      }),
    ),
    session_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description:
          "For a provider gateway (X-Rota-Proxy-Id names one, `kind: gateway`): the call's session " +
          '(X-Rota-Session). The provider session it exited from cools for the host and the session moves ' +
          'to the next one; the gateway stays in use for every other session. Required for a gateway, ' +
          'whose calls without a session each had an exit of their own.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type BanReportBodyT = Static<typeof BanReportBody>;
