/**
 * HAR 1.2 as a JSON Schema (draft 7), written from the specification
 * (http://www.softwareishard.com/blog/har-12-spec/, W3C Web Performance draft): required fields, their
 * types and ranges. Custom fields (`_name`) are allowed where the specification allows them, nowhere
 * else a field it does not name.
 */
const nameValue = {
  type: 'object',
  required: ['name', 'value'],
  properties: { name: { type: 'string' }, value: { type: 'string' }, comment: { type: 'string' } },
  patternProperties: { '^_': {} },
  additionalProperties: false,
};
const cookie = {
  type: 'object',
  required: ['name', 'value'],
  properties: {
    name: { type: 'string' },
    value: { type: 'string' },
    path: { type: 'string' },
    domain: { type: 'string' },
    expires: { type: ['string', 'null'], format: 'date-time' },
    httpOnly: { type: 'boolean' },
    secure: { type: 'boolean' },
    comment: { type: 'string' },
  },
  patternProperties: { '^_': {} },
  additionalProperties: false,
};
const custom = { patternProperties: { '^_': {} }, additionalProperties: false };

const request = {
  type: 'object',
  required: ['method', 'url', 'httpVersion', 'cookies', 'headers', 'queryString', 'headersSize', 'bodySize'],
  properties: {
    method: { type: 'string' },
    url: { type: 'string' },
    httpVersion: { type: 'string' },
    cookies: { type: 'array', items: cookie },
    headers: { type: 'array', items: nameValue },
    queryString: { type: 'array', items: nameValue },
    postData: { type: 'object' },
    headersSize: { type: 'integer' },
    bodySize: { type: 'integer' },
    comment: { type: 'string' },
  },
  ...custom,
};

const response = {
  type: 'object',
  required: [
    'status',
    'statusText',
    'httpVersion',
    'cookies',
    'headers',
    'content',
    'redirectURL',
    'headersSize',
    'bodySize',
  ],
  properties: {
    status: { type: 'integer' },
    statusText: { type: 'string' },
    httpVersion: { type: 'string' },
    cookies: { type: 'array', items: cookie },
    headers: { type: 'array', items: nameValue },
    content: {
      type: 'object',
      required: ['size', 'mimeType'],
      properties: {
        size: { type: 'integer' },
        compression: { type: 'integer' },
        mimeType: { type: 'string' },
        text: { type: 'string' },
        encoding: { type: 'string' },
        comment: { type: 'string' },
      },
      ...custom,
    },
    redirectURL: { type: 'string' },
    headersSize: { type: 'integer' },
    bodySize: { type: 'integer' },
    comment: { type: 'string' },
  },
  ...custom,
};

const timing = { type: 'number', minimum: -1 };
const entry = {
  type: 'object',
  required: ['startedDateTime', 'time', 'request', 'response', 'cache', 'timings'],
  properties: {
    pageref: { type: 'string' },
    startedDateTime: { type: 'string', format: 'date-time' },
    time: { type: 'number', minimum: 0 },
    request,
    response,
    cache: { type: 'object', ...custom, properties: { beforeRequest: {}, afterRequest: {}, comment: {} } },
    timings: {
      type: 'object',
      required: ['send', 'wait', 'receive'],
      properties: {
        blocked: timing,
        dns: timing,
        connect: timing,
        send: { type: 'number', minimum: 0 },
        wait: { type: 'number', minimum: 0 },
        receive: { type: 'number', minimum: 0 },
        ssl: timing,
        comment: { type: 'string' },
      },
      ...custom,
    },
    serverIPAddress: { type: 'string' },
    connection: { type: 'string' },
    comment: { type: 'string' },
  },
  ...custom,
};

export const HAR_12_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  required: ['log'],
  properties: {
    log: {
      type: 'object',
      required: ['version', 'creator', 'entries'],
      properties: {
        version: { type: 'string', const: '1.2' },
        creator: {
          type: 'object',
          required: ['name', 'version'],
          properties: { name: { type: 'string' }, version: { type: 'string' }, comment: { type: 'string' } },
          ...custom,
        },
        browser: { type: 'object' },
        pages: { type: 'array' },
        entries: { type: 'array', items: entry },
        comment: { type: 'string' },
      },
      ...custom,
    },
  },
  additionalProperties: false,
} as const;
