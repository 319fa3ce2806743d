// The OpenAPI 3.1 document of every route, served at /api/v1/openapi.json (public port) and
// /openapi.json (admin port). Made from the code's own tables — the categories and their
// detail fields, the error catalogue with its exact messages and result codes — so the document
// cannot drift from what the server says; test/openapi.test.ts checks real answers of every
// route against it.

import { CATEGORIES, CONFIDENCE_VALUES, DETAIL_FIELDS, METHOD_VALUES, type DetailField } from '../../model/categories.js';
import { ERRORS, RC } from '../../wire/errors.js';
import { BATCH_REQUEST, KEY_CREATE_REQUEST, TOKEN_REQUEST } from '../../wire/request-bodies.js';
import { VERSION } from '../../version.js';
import type { Edge } from '../admission/edge.js';
import type { RouteTable } from '../../http/routes.js';
import { staticBody } from '../../http/compressing-response.js';
import { writePublicJsonType } from '../../http/json.js';
import { ADMIN, DATE, DATE_TIME, REPLICA, apiKeyFields, json, object, ref, type Schema } from '../openapi-schema.js';
import { operatorPaths, operatorSchemas } from '../admin/openapi.js';

const DETAIL_SCHEMAS: Record<DetailField, Schema> = {
  provider: { type: 'string' },
  confidence: { enum: [...CONFIDENCE_VALUES] },
  method: { enum: [...METHOD_VALUES] },
  first_seen: DATE,
  last_seen: DATE,
  hits: { type: 'integer', minimum: 0 },
  hits_days_pct: { type: 'integer', minimum: 0, maximum: 100 },
  providers_num: { type: 'integer', minimum: 0 },
};

/** A lookup result: `ip` and `is_vpn` always; the rest as the plan has them (interface.md §2.2). */
function lookupResult(): Schema {
  const properties: Record<string, Schema> = { ip: { type: 'string', description: 'The address in normalised form (RFC 5952 for IPv6).' } };
  for (const c of CATEGORIES) properties[`is_${c}`] = { type: 'boolean' };
  for (const c of CATEGORIES) {
    properties[c] = {
      ...object(Object.fromEntries(DETAIL_FIELDS[c].map((f) => [f, DETAIL_SCHEMAS[f]])), []),
      description: `Detail of the ${c} category; {} when the address is not in it. Present from the plan that includes it.`,
    };
  }
  properties.as_of = {
    type: 'string',
    format: 'date-time',
    description: 'Only in lookups as of a time (at): when the build that answered then began to serve.',
  };
  return {
    ...object(properties, ['ip', 'is_vpn']),
    description: 'Fields beyond ip and is_vpn depend on the plan: absent, not false, where the plan lacks them.',
  };
}

/** `{error}` bodies of the lookup group, each message exact. */
const errorBody = (...messages: string[]): Schema => object({ error: { enum: messages } });
/**
 * `{rc}` bodies of the database group and key management: a result code; `message`, where
 * given, says what was wrong and how to put it right.
 */
const rcBody = (...codes: string[]): Schema => object({ rc: { enum: codes }, message: { type: 'string' } }, ['rc']);

const H = {
  retryAfter: { description: 'Seconds to wait (integer).', schema: { type: 'string', pattern: '^[0-9]+$' } },
  rateLimitPolicy: {
    description: 'draft-ietf-httpapi-ratelimit-headers-10: the "rate" token bucket, and the "monthly"/"daily" window where a hard limit refuses.',
    schema: { type: 'string' },
  },
  rateLimit: { description: 'draft-ietf-httpapi-ratelimit-headers-10: r (units left) and t (seconds to reset) per policy.', schema: { type: 'string' } },
};
const quotaHeaders = {
  'RateLimit-Policy': H.rateLimitPolicy,
  RateLimit: H.rateLimit,
  'X-Allowance-Quota': { description: "The plan's quota for the window.", schema: { type: 'string' } },
  'X-Allowance-Used': { description: 'Lookups used in the window (an estimate across threads).', schema: { type: 'string' } },
  'X-Allowance-Reset': { description: 'Seconds to the end of the window.', schema: { type: 'string' } },
  'X-Allowance-Hard-Limit': { description: 'The overage limit, when there is one.', schema: { type: 'string' } },
};

const E = ERRORS;
const keyErrors = [E.keyInvalid.message, E.keyRevoked.message, E.keyExpired.message];
const lookupRefusals = {
  '401': json(errorBody(...keyErrors), 'The key presented is unknown, revoked or expired.'),
  '403': json(errorBody(E.sourceNotAllowed.message), "The request's source is outside the key's allowed ranges."),
  '429': json(
    errorBody(E.rateLimited.message, E.keylessCap.message, E.allowanceSpent.message),
    'A transient rate limit (with Retry-After), or a spent allowance (without).',
    { 'Retry-After': H.retryAfter, 'RateLimit-Policy': H.rateLimitPolicy, RateLimit: H.rateLimit },
  ),
  '500': json(errorBody(E.lookupFailed.message), 'The dataset could not be consulted.'),
  '503': json(
    errorBody(E.unavailable.message),
    'The key could not be checked: the control database of a cluster cannot be reached now (cached keys go on working for a while).',
    { 'Retry-After': H.retryAfter },
  ),
};
/** Where the control database of a cluster cannot be reached now. */
const UNAVAILABLE_RC = 'The control database of a cluster cannot be reached now.';

const keyAuth = [{ bearer: [] }, { apiKeyHeader: [] }, { apiKeyQuery: [] }];
const optionalKey = [{}, ...keyAuth];

/** The database group's refusals: 401 for any key problem or a missing scope. */
const dbRefusals = (...extra: [string, Schema][]): Record<string, Schema> => ({
  '401': json(rcBody(RC.UNAUTHORIZED.code), 'No key, an invalid one, or one without db.download.'),
  '403': json(rcBody(RC.FORBIDDEN.code, RC.NO_LICENSE.code, RC.LICENSE_EXPIRED.code), "Source outside the key's ranges; no licence; licence term ended."),
  '503': json(rcBody(RC.UNAVAILABLE.code), UNAVAILABLE_RC, { 'Retry-After': H.retryAfter }),
  ...Object.fromEntries(extra),
  '500': json(rcBody(RC.INTERNAL.code), 'An unexpected failure.'),
});

/** 404 for an unknown database, 503 while today's copy is not published (with Retry-After where the answer has it). */
const missing = (retry = false): [string, Schema][] => [
  ['404', json(rcBody(RC.NOT_FOUND.code), 'No such database.')],
  [
    '503',
    json(
      rcBody(RC.NOT_PUBLISHED.code, RC.UNAVAILABLE.code),
      `NOT_PUBLISHED: today's copy is not published yet. INTERNAL: ${UNAVAILABLE_RC}`,
      retry ? { 'Retry-After': H.retryAfter } : undefined,
    ),
  ],
];

const query = (name: string, schema: Schema, required: boolean, description: string): Schema => ({ name, in: 'query', required, description, schema });
const idParam = query('id', { type: 'string', pattern: '^[a-z0-9_]+_v[0-9]+$' }, true, 'Dataset id, <base>_v<version>.');
const formatParam = query('format', { enum: ['csvgz', 'mmdb'] }, true, 'File format.');
const validator = { ETag: { description: 'Strong validator of the document (a compressed answer has a tag of its own).', schema: { type: 'string' } } };

const keyManagement = { security: [{ bearer: [] }] };
const keyRefusals = {
  '400': json(rcBody(RC.BAD_REQUEST.code), 'A body or field that does not parse, or a revoked key to rotate.'),
  '401': json(rcBody(RC.UNAUTHORIZED.code), 'No Bearer key, an invalid one, or one without apikeys.manage.'),
  '403': json(rcBody(RC.FORBIDDEN.code), "Source outside the key's ranges, or a key with more than the caller holds."),
  '404': json(rcBody(RC.NOT_FOUND.code), "No such key in the caller's organisation."),
  '429': json(
    rcBody(RC.RATE_LIMITED.code),
    'Key changes (create, rotate, revoke) faster than KEY_CHANGES_PER_MIN for the organisation, or key-list pages faster than 20 a second (100 at once).',
    { 'Retry-After': H.retryAfter },
  ),
  '503': json(rcBody(RC.UNAVAILABLE.code), UNAVAILABLE_RC, { 'Retry-After': H.retryAfter }),
};
/** A page's cursor: the `next` of the page before. */
const afterParam = (what: string): Schema => query('after', { type: 'string' }, false, `The next cursor of the page before (${what}); absent: the first page.`);
const limitParam = query('limit', { type: 'integer', minimum: 1 }, false, 'Entries a page: a whole number from 1, at most 200 taken (default 50).');
const nextField = { type: ['string', 'null'], description: 'The cursor of the next page (pass as after), or null on the last page.' };
const keyIdParam = { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };

/** One source in GET /admin/v1/sources (and `ipsift sources status --json`). */
const SOURCE_STATUS = object(
  {
    name: { type: 'string' },
    url: { type: ['string', 'null'] },
    state: { enum: ['ok', 'stale', 'expired', 'refused', 'failed', 'never', 'disabled'] },
    reason: { type: ['string', 'null'], description: 'Why the latest attempt was refused or failed.' },
    serving: { type: 'boolean', description: 'Whether a good copy answers (the last one, where the latest attempt was refused or failed).' },
    entries: { type: 'integer', minimum: 0 },
    bytes: { type: 'integer', minimum: 0 },
    fetched_at: { ...DATE_TIME, type: ['string', 'null'] },
    changed_at: { ...DATE_TIME, type: ['string', 'null'] },
    good_at: { ...DATE_TIME, type: ['string', 'null'] },
    age_s: { type: ['integer', 'null'], minimum: 0 },
    content_age_s: { type: ['integer', 'null'], minimum: 0, description: 'Seconds since the content last changed (null: none yet).' },
    max_age_s: { type: ['integer', 'null'], minimum: 60, description: 'How long the content may go unchanged before it is stale (null: no limit).' },
    freshness: {
      enum: ['fresh', 'stale', 'expired'],
      description: 'stale: unchanged past max_age, its claims a band lower; expired: past twice max_age, its claims no longer count.',
    },
    interval_s: { type: 'integer', minimum: 60 },
    next_at: { ...DATE_TIME, type: ['string', 'null'], description: 'When it is next fetched (null: never tried yet, or disabled).' },
    disabled: {
      oneOf: [{ type: 'null' }, object({ at: DATE_TIME, by: { type: 'string' } })],
      description: 'Who disabled it and when (null: enabled). A disabled source is neither fetched nor built from.',
    },
  },
  [
    'name',
    'url',
    'state',
    'reason',
    'serving',
    'entries',
    'bytes',
    'fetched_at',
    'changed_at',
    'good_at',
    'age_s',
    'content_age_s',
    'max_age_s',
    'freshness',
    'interval_s',
    'next_at',
    'disabled',
  ],
);

export function openApiDocument(): Schema {
  const schemas: Record<string, Schema> = {
    LookupResult: lookupResult(),
    BatchRequest: { ...BATCH_REQUEST },
    BatchResponse: object({
      results: { type: 'object', additionalProperties: ref('LookupResult'), description: 'By the exact input string.' },
      errors: {
        type: 'object',
        description: 'By the exact input string: the status and message a single lookup would have had.',
        additionalProperties: object({
          status: { enum: [400, 429, 500] },
          error: { enum: [E.notAddress.message, E.keylessCap.message, E.allowanceSpent.message, E.lookupFailed.message] },
        }),
      },
    }),
    Database: object({
      base: { type: 'string' },
      name: { type: 'string' },
      summary: { type: 'string' },
      license_type: { type: ['string', 'null'] },
      starts: { type: ['string', 'null'], format: 'date-time' },
      expires: { type: ['string', 'null'], format: 'date-time' },
      renews_at: { type: ['string', 'null'], format: 'date-time' },
      notice_due_at: { type: ['string', 'null'], format: 'date-time' },
      in_term: { type: 'boolean' },
      standing: { enum: ['licensed', 'expired', 'unlicensed'] },
      versions: {
        type: 'array',
        items: object({
          id: { type: 'string' },
          version: { type: 'integer' },
          summary: { type: 'string' },
          formats: { type: 'array', items: object({ format: { enum: ['csvgz', 'mmdb'] }, bytes: { type: 'integer', minimum: 0 } }) },
          sample_formats: { type: 'array', items: { enum: ['csvgz', 'mmdb'] } },
          diffs: {
            type: 'array',
            description:
              'Diffs published beside the newest files, from the file published before it (from_sha256, as the checksum endpoint gave it) to the current one (to_sha256): the CSV diff (diff=true; `ipsift diff apply` applies one and checks it) and the range diff (diff=ranges).',
            items: object({
              format: { enum: ['csvgz', 'ranges'], description: 'csvgz: the CSV diff (diff=true); ranges: the range diff, JSON lines (diff=ranges).' },
              bytes: { type: 'integer', minimum: 0 },
              from_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
              to_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
            }),
          },
        }),
      },
    }),
    Metadata: object({
      id: { type: 'string' },
      update_freq: { type: 'string' },
      updated: DATE,
      entries: { type: 'integer', minimum: 0 },
      schema: {
        type: 'object',
        additionalProperties: { type: 'array', items: object({ name: { type: 'string' }, type: { type: 'string' }, description: { type: 'string' } }) },
      },
      sample: { type: 'object', additionalProperties: { type: 'array', items: { type: 'object' } } },
      size: { type: 'object', additionalProperties: { type: 'integer', minimum: 0 }, description: 'Bytes per format.' },
      sample_size: { type: 'object', additionalProperties: { type: 'integer', minimum: 0 }, description: 'Bytes per format.' },
      sample_entries: { type: 'integer', minimum: 0 },
    }),
    Checksums: object({
      id: { type: 'string' },
      format: { enum: ['csvgz', 'mmdb'] },
      checksums: object({
        md5: { type: 'string', pattern: '^[0-9a-f]{32}$' },
        sha1: { type: 'string', pattern: '^[0-9a-f]{40}$' },
        sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
        sha512: { type: 'string', pattern: '^[0-9a-f]{128}$' },
      }),
    }),
    Download: object({
      dataset_id: { type: 'string' },
      format: { type: 'string' },
      outcome: { enum: ['ok', 'bad_request', 'forbidden', 'bad_format', 'no_license', 'license_expired', 'not_found', 'not_published'] },
      sample: { type: 'boolean' },
      bytes: { type: 'integer', minimum: 0 },
      http_status: { type: 'integer' },
      apikey_id: { type: 'string', format: 'uuid' },
      client_ip: { type: 'string' },
      user_agent: { type: 'string' },
      created: DATE_TIME,
    }),
    Account: object({
      org_id: { type: 'string', format: 'uuid' },
      apikey: object({
        id: { type: 'string', format: 'uuid' },
        expires: { type: ['string', 'null'], format: 'date-time' },
        allowed_cidrs: { type: 'array', items: { type: 'string' } },
      }),
      plan: object({ key: { type: 'string' }, tier: { enum: ['free', 'starter', 'scale', 'max', 'basic'] } }),
      usage: object({
        requests: { type: 'integer', minimum: 0 },
        quota: { type: 'integer', minimum: 0 },
        hard_limit: { type: ['integer', 'null'] },
        window_start: DATE_TIME,
        window_end: DATE_TIME,
      }),
    }),
    ApiKey: object(apiKeyFields),
    ApiKeyAnswer: object({ rc: { const: 'OK' }, ...apiKeyFields }),
    RotatedApiKey: object({ rc: { const: 'OK' }, ...apiKeyFields, key: { type: 'string', description: 'The new secret, in this answer only.' } }),
    ...operatorSchemas(),
    CreatedApiKey: object({
      rc: { const: 'OK' },
      id: apiKeyFields.id,
      name: apiKeyFields.name,
      key: { type: 'string' },
      key_prefix: apiKeyFields.key_prefix,
      allowed_cidrs: apiKeyFields.allowed_cidrs,
      allowed_scopes: apiKeyFields.allowed_scopes,
    }),
  };

  /** `at`: a lookup as of a time (history), for keys of plans that keep it. */
  const atParam = {
    name: 'at',
    in: 'query',
    required: false,
    description:
      'Answer as the service answered at this RFC 3339 time (2026-11-01T12:00:00Z), within the history kept (HISTORY_DAYS, default a year), with as_of. Keys of the scale and max plans; the fields are those of the plan today. Absent: the answer of now.',
    schema: { type: 'string', format: 'date-time' },
  };
  const asOfBadRequest = (...messages: string[]): Schema =>
    object({ error: { anyOf: [...(messages.length ? [{ enum: messages }] : []), { type: 'string', pattern: '^(at |no history is kept here yet)' }] } });
  const asOfRefusals = {
    ...lookupRefusals,
    '401': json(errorBody(...keyErrors, E.keyRequired.message), 'The key presented is unknown, revoked or expired; or at was asked without a key.'),
    '403': json(
      errorBody(E.sourceNotAllowed.message, E.historyNotInPlan.message),
      "The request's source is outside the key's allowed ranges, or at was asked of a plan without history.",
    ),
  };
  const lookupOk = json(ref('LookupResult'), 'The lookup result, with the fields of the plan.', quotaHeaders);
  const paths: Record<string, Schema> = {
    '/{ip}': {
      get: {
        operationId: 'lookup',
        summary: 'Classify one address',
        security: optionalKey,
        parameters: [
          { name: 'ip', in: 'path', required: true, description: 'An IPv4 or IPv6 address (percent-encoded where needed).', schema: { type: 'string' } },
          atParam,
        ],
        responses: {
          '200': lookupOk,
          '400': json(asOfBadRequest(E.notAddress.message), 'Not an IP address, or an at refused (the message says why).'),
          ...asOfRefusals,
        },
      },
    },
    '/myip': {
      get: {
        operationId: 'lookupOwn',
        summary: "Classify the request's own source address",
        security: optionalKey,
        parameters: [atParam],
        responses: { '200': lookupOk, '400': json(asOfBadRequest(), 'An at refused (the message says why).'), ...asOfRefusals },
      },
    },
    '/batch': {
      post: {
        operationId: 'lookupBatch',
        summary: 'Classify up to 1000 addresses',
        security: optionalKey,
        requestBody: { required: true, content: { 'application/json': { schema: ref('BatchRequest') } } },
        responses: {
          '200': json(ref('BatchResponse'), 'Per-entry results and errors (br or gzip when asked, for answers of 1 KiB or more).', quotaHeaders),
          '400': json(
            object({
              error: {
                anyOf: [
                  { enum: [E.batchShape.message, E.batchSize.message] },
                  { type: 'string', pattern: '^(unknown field "|at |no history is kept here yet)' },
                ],
              },
            }),
            'The body is not {ips: [strings]} of 1 to 1000 entries, names a field besides ips and at, or has an at refused (the message says which).',
          ),
          '413': json(errorBody(E.bodyTooLarge.message), 'Larger than any 1000-address batch.'),
          ...asOfRefusals,
        },
      },
    },
    '/api/v1/account/me': {
      get: {
        operationId: 'account',
        summary: 'The key, its plan and its usage in the current window',
        security: keyAuth,
        responses: {
          '200': json(ref('Account'), 'The account.'),
          '401': json(errorBody(E.keyRequired.message, ...keyErrors), 'No key, or an unknown, revoked or expired one.'),
          '403': lookupRefusals['403'],
          '503': json(
            errorBody(E.usageUnavailable.message, E.unavailable.message),
            'Usage cannot be read now, or the key cannot be checked now (a cluster whose control database cannot be reached: with Retry-After).',
          ),
        },
      },
    },
    '/api/v1/changes': {
      get: {
        operationId: 'changes',
        summary: 'What changed, in order, a page at a time: each range whose answer changed when a build began to serve, before and after per category',
        description:
          'Read from the timeline of answers (HISTORY_DAYS kept). Keep the last next and ask again with it to get what changed since: nothing is missed or repeated, across builds and restarts. A key with the changes.read scope, of the scale or max plan; categories are those the plan shows.',
        security: keyAuth,
        parameters: [
          query(
            'since',
            { type: 'string', pattern: '^(0|[0-9]+\\.[46]\\.[0-9a-f]+)$' },
            false,
            '0 (the default: from the first change kept), or the next of an earlier page.',
          ),
          query('limit', { type: 'integer', minimum: 1 }, false, 'Ranges a page: a whole number from 1, at most 1000 taken (default 100).'),
        ],
        responses: {
          '200': json(
            object({
              changes: {
                type: 'array',
                items: object({
                  first: { type: 'string' },
                  last: { type: 'string' },
                  build: { type: 'string', description: 'The build that began to serve.' },
                  at: { type: 'string', format: 'date-time', description: 'When it began to serve.' },
                  categories: {
                    type: 'object',
                    description: 'Per category that changed: its detail before and after ({} where the plan shows no detail; null: not in the category).',
                    additionalProperties: object({ before: { type: ['object', 'null'] }, after: { type: ['object', 'null'] } }),
                  },
                }),
              },
              next: { type: 'string', description: 'The cursor of the next page, or, on the last, where to ask again for what changes later.' },
            }),
            'A page of changes.',
          ),
          '400': json(rcBody('BAD_REQUEST'), 'since, limit or another parameter refused (the message says why).'),
          '401': json(rcBody('UNAUTHORIZED'), 'No key, an unknown, revoked or expired one, or one without changes.read.'),
          '403': json(rcBody('FORBIDDEN'), "The key's plan has no change feed (scale and max have it), or its source is outside its ranges."),
          '503': json(rcBody('INTERNAL'), 'The key cannot be checked now (a cluster whose control database cannot be reached).'),
        },
      },
    },
    '/api/v1/iam/apikeys': {
      get: {
        operationId: 'listKeys',
        summary: "The organisation's keys (no secrets), oldest first, a page at a time",
        ...keyManagement,
        parameters: [limitParam, afterParam('a key id')],
        responses: {
          '200': json(object({ rc: { const: 'OK' }, apikeys: { type: 'array', items: ref('ApiKey') }, next: nextField }), 'A page of keys.'),
          ...keyRefusals,
        },
      },
      post: {
        operationId: 'createKey',
        summary: 'Create a key; its secret is in this answer only',
        ...keyManagement,
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { ...KEY_CREATE_REQUEST },
            },
          },
        },
        responses: {
          '201': json(ref('CreatedApiKey'), 'The created key, with its secret.'),
          ...keyRefusals,
          '409': json(rcBody(RC.KEY_LIMIT.code), 'The organisation holds MAX_KEYS_PER_ORG live keys already.'),
        },
      },
    },
    '/api/v1/iam/apikeys/{id}': {
      delete: {
        operationId: 'revokeKey',
        summary: 'Revoke a key',
        ...keyManagement,
        parameters: [keyIdParam],
        responses: { '200': json(ref('ApiKeyAnswer'), 'The revoked key.'), ...keyRefusals },
      },
    },
    '/api/v1/iam/apikeys/{id}/rotate': {
      post: {
        operationId: 'rotateKey',
        summary: 'A new secret for a key; the old one stops working',
        ...keyManagement,
        parameters: [keyIdParam],
        responses: { '200': json(ref('RotatedApiKey'), 'The key with its new secret.'), ...keyRefusals },
      },
    },
    '/api/v1/auth/token': {
      post: {
        operationId: 'createToken',
        summary: 'Exchange a key for a short-lived token, usable wherever the key is (browsers: use tokens, not keys)',
        security: [{ bearer: [] }],
        requestBody: {
          required: false,
          content: { 'application/json': { schema: { ...TOKEN_REQUEST } } },
        },
        responses: {
          '201': json(
            object({
              rc: { const: 'OK' },
              token: { type: 'string', pattern: '^ist_[A-Za-z0-9_.-]+$' },
              token_id: { type: 'string' },
              token_type: { const: 'Bearer' },
              expires: DATE_TIME,
              expires_in: { type: 'integer', minimum: 0 },
              scopes: apiKeyFields.allowed_scopes,
              org_id: { type: 'string', format: 'uuid' },
            }),
            "The token; it never outlives the key, and holds the key's scopes or the subset asked for.",
          ),
          '400': json(rcBody(RC.BAD_REQUEST.code), 'A body or field that does not parse.'),
          '401': json(rcBody(RC.UNAUTHORIZED.code), 'No Bearer key, or an invalid, revoked or expired one.'),
          '403': json(rcBody(RC.FORBIDDEN.code), "A scope the key lacks, a token presented instead of a key, or a source outside the key's ranges."),
        },
      },
      delete: {
        operationId: 'revokeToken',
        summary: 'Revoke the token presented as the Bearer credential',
        security: [{ bearer: [] }],
        responses: {
          '200': json(object({ rc: { const: 'OK' }, token_id: { type: 'string' }, revoked_at: DATE_TIME }), 'Revoked.'),
          '400': json(rcBody(RC.BAD_REQUEST.code), 'The credential is a key, not a token.'),
          '401': json(rcBody(RC.UNAUTHORIZED.code), 'No Bearer credential, or an invalid, revoked or expired one.'),
          '403': json(rcBody(RC.FORBIDDEN.code), "A source outside the key's ranges."),
        },
      },
    },
    '/api/v1/database/list': {
      get: {
        operationId: 'listDatabases',
        summary: "The catalogue with the organisation's licences",
        security: keyAuth,
        responses: { '200': json(object({ databases: { type: 'array', items: ref('Database') } }), 'The databases.'), ...dbRefusals() },
      },
    },
    '/api/v1/database/download': {
      get: {
        operationId: 'download',
        summary: 'A time-limited link to the published file',
        security: keyAuth,
        parameters: [
          idParam,
          formatParam,
          query('sample', { enum: ['true', 'false'] }, false, 'A sample (no licence needed).'),
          query(
            'diff',
            { enum: ['true', 'ranges', 'false'] },
            false,
            "From the version published before (format=csvgz, full file only): true, the CSV's diff; ranges, the range diff (JSON lines). 404 where none was published.",
          ),
        ],
        responses: {
          '302': { description: 'Redirect to the file (a signed /files/ link, or a presigned S3 one).', headers: { Location: { schema: { type: 'string' } } } },
          '400': json(rcBody(RC.BAD_REQUEST.code, RC.FORMAT_NOT_BUILT.code), 'A missing or malformed parameter, or a format the database is not built in.'),
          ...dbRefusals(...missing(true)),
        },
      },
    },
    '/api/v1/database/metadata': {
      get: {
        operationId: 'metadata',
        summary: 'What the current build of a database holds',
        security: keyAuth,
        parameters: [idParam],
        responses: {
          '200': json(ref('Metadata'), 'The metadata.', validator),
          '304': { description: 'If-None-Match named the current document.' },
          '400': json(rcBody(RC.BAD_REQUEST.code), 'A missing or malformed parameter.'),
          ...dbRefusals(...missing()),
        },
      },
    },
    '/api/v1/database/checksum': {
      get: {
        operationId: 'checksum',
        summary: "The published file's checksums",
        security: keyAuth,
        parameters: [idParam, formatParam],
        responses: {
          '200': json(ref('Checksums'), 'The checksums.', validator),
          '304': { description: 'If-None-Match named the current document.' },
          '400': json(rcBody(RC.BAD_REQUEST.code, RC.FORMAT_NOT_BUILT.code), 'A missing or malformed parameter, or a format not built.'),
          ...dbRefusals(...missing()),
        },
      },
    },
    '/api/v1/database/downloads': {
      get: {
        operationId: 'downloadHistory',
        summary: "The organisation's download history, newest first",
        security: keyAuth,
        parameters: [query('limit', { type: 'integer', minimum: 1, maximum: 200, default: 50 }, false, 'How many entries.')],
        responses: {
          '200': json(object({ downloads: { type: 'array', items: ref('Download') } }), 'The history.'),
          '400': json(rcBody(RC.BAD_REQUEST.code), 'A limit outside 1..200.'),
          ...dbRefusals(),
        },
      },
    },
    '/files/{key}': {
      get: {
        operationId: 'file',
        summary: 'A published file, through a signed link (local store)',
        parameters: [
          { name: 'key', in: 'path', required: true, schema: { type: 'string' } },
          query('expires', { type: 'string' }, true, 'Unix time the link lapses.'),
          query('name', { type: 'string' }, true, 'Download name.'),
          query('sig', { type: 'string' }, true, 'The link signature.'),
        ],
        responses: {
          '200': { description: 'The file (an MMDB gzip-coded when asked).', content: { 'application/octet-stream': {}, 'application/gzip': {} } },
          '206': { description: 'The requested range.' },
          '304': { description: 'If-None-Match named the file.' },
          '403': json(rcBody(RC.FORBIDDEN.code), 'An unknown, tampered or expired link.'),
          '416': json(rcBody(RC.BAD_REQUEST.code), 'A range outside the file.'),
        },
      },
    },
    '/geoip/databases/{edition}/update': {
      get: {
        operationId: 'geoipupdate',
        summary: "geoipupdate 4.x/5.x protocol: the edition's MMDB, gzip-compressed, unless db_md5 is current",
        security: [{ geoipupdate: [] }],
        parameters: [
          { name: 'edition', in: 'path', required: true, schema: { type: 'string' } },
          query('db_md5', { type: 'string' }, false, 'MD5 of the MMDB the client has.'),
        ],
        responses: {
          '200': {
            description: 'The MMDB, gzip-compressed.',
            headers: { 'X-Database-MD5': { schema: { type: 'string' } }, 'Last-Modified': { schema: { type: 'string' } } },
            content: { 'application/gzip': {} },
          },
          '304': { description: 'db_md5 is the current MMDB.' },
          '400': json(rcBody(RC.FORMAT_NOT_BUILT.code), 'The database has no MMDB.'),
          ...dbRefusals(...missing()),
        },
      },
    },
    '/geoip/updates/metadata': {
      get: {
        operationId: 'geoipupdateMetadata',
        summary: 'geoipupdate 6.x+ protocol: the MD5 and date of each edition, checked as a download would be',
        security: [{ geoipupdate: [] }],
        parameters: [
          {
            name: 'edition_id',
            in: 'query',
            required: true,
            description: 'One or more (at most 50).',
            schema: { type: 'array', items: { type: 'string' } },
            style: 'form',
            explode: true,
          },
        ],
        responses: {
          '200': json(
            object({
              databases: { type: 'array', items: object({ edition_id: { type: 'string' }, md5: { type: 'string', pattern: '^[0-9a-f]{32}$' }, date: DATE }) },
            }),
            'Each edition asked for.',
          ),
          '400': json(rcBody(RC.BAD_REQUEST.code, RC.FORMAT_NOT_BUILT.code), 'No edition, more than 50, or one without an MMDB.'),
          ...dbRefusals(...missing()),
        },
      },
    },
    '/geoip/databases/{edition}/download': {
      get: {
        operationId: 'geoipupdateDownload',
        summary: "geoipupdate 6.x+ protocol: the edition's current MMDB in a tar.gz ({edition}_{date}/{edition}.mmdb)",
        security: [{ geoipupdate: [] }],
        parameters: [
          { name: 'edition', in: 'path', required: true, schema: { type: 'string' } },
          query('date', { type: 'string' }, false, 'YYYYMMDD (not checked: the latest is sent).'),
          query('suffix', { const: 'tar.gz' }, false, 'tar.gz.'),
        ],
        responses: {
          '200': { description: 'The tar.gz.', headers: { 'Last-Modified': { schema: { type: 'string' } } }, content: { 'application/gzip': {} } },
          '206': { description: 'The requested range of it.' },
          '400': json(rcBody(RC.FORMAT_NOT_BUILT.code), 'The database has no MMDB.'),
          '416': json(rcBody(RC.BAD_REQUEST.code), 'A range past the end.'),
          ...dbRefusals(...missing()),
        },
      },
    },
    '/api/v1/openapi.json': {
      get: { operationId: 'openapi', summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1.', content: { 'application/json': {} } } } },
    },
    '/healthz': {
      servers: ADMIN,
      get: { operationId: 'health', summary: 'Liveness', responses: { '200': json(object({ status: { const: 'ok' } }), 'Alive.') } },
    },
    '/readyz': {
      servers: ADMIN,
      get: {
        operationId: 'ready',
        summary: 'Readiness: an index is loaded on every thread, not shutting down',
        responses: {
          '200': json(
            object(
              { status: { const: 'ready' }, build: { type: 'string' }, loaded_at: DATE_TIME, http_server: { enum: ['uws', 'bun', 'node'] }, replica: REPLICA },
              ['status', 'build', 'loaded_at', 'http_server'],
            ),
            'Ready.',
          ),
          '503': json(
            object({ status: { const: 'not ready' }, reason: { type: 'string' }, http_server: { enum: ['uws', 'bun', 'node'] }, replica: REPLICA }, [
              'status',
              'reason',
              'http_server',
            ]),
            'Not ready, and why.',
          ),
        },
      },
    },
    '/metrics': {
      servers: ADMIN,
      get: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        responses: { '200': { description: 'Text format 0.0.4.', content: { 'text/plain': {} } } },
      },
    },
    '/explain/{ip}': {
      servers: ADMIN,
      get: {
        operationId: 'explain',
        summary: 'Every feed that covers an address and the rule that decided each category (an operator token with admin.read)',
        security: [{ operator: [] }],
        parameters: [{ name: 'ip', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': json({ type: 'object' }, 'The explanation.'),
          '400': json(errorBody(E.notAddress.message), 'Not an IP address.'),
          '401': json(rcBody(RC.UNAUTHORIZED.code), 'No operator token, an unknown or revoked one, or two different Authorization headers.'),
          '403': json(rcBody(RC.FORBIDDEN.code), 'The token lacks admin.read.'),
          '429': json(errorBody(E.rateLimited.message), 'One explanation runs at a time.', { 'Retry-After': H.retryAfter }),
        },
      },
    },
    '/admin/v1/sources': {
      servers: ADMIN,
      get: {
        operationId: 'sourceStatus',
        summary: "Each configured source's state, entries and freshness (an operator token with admin.read; empty where no sources are configured)",
        security: [{ operator: [] }],
        responses: {
          '200': json(object({ sources: { type: 'array', items: SOURCE_STATUS } }, ['sources']), 'The sources, in configured order.'),
          '401': json(rcBody(RC.UNAUTHORIZED.code), 'No operator token, an unknown or revoked one, or two different Authorization headers.'),
          '403': json(rcBody(RC.FORBIDDEN.code), 'The token lacks admin.read.'),
        },
      },
    },
    ...operatorPaths(),
    '/': {
      servers: ADMIN,
      get: { operationId: 'adminRoot', summary: "The admin port's root: to the console", responses: { '302': { description: 'Location: /console/.' } } },
    },
    '/console': {
      servers: ADMIN,
      get: { operationId: 'consoleRedirect', summary: 'To the console', responses: { '308': { description: 'Location: /console/.' } } },
    },
    '/console/': {
      servers: ADMIN,
      get: {
        operationId: 'console',
        summary: "The operator's console (sign in with an operator token); never stored by a cache, under a strict Content-Security-Policy",
        responses: {
          '200': { description: 'The page.', content: { 'text/html': {} } },
          '404': json(errorBody('the console is not built here: npm run build writes it into dist/console'), 'Not built (dist/console is missing).'),
        },
      },
    },
    '/console/assets/{hash}/{file}': {
      servers: ADMIN,
      get: {
        operationId: 'consoleAsset',
        summary: "A script or style sheet of the console, under its build's hash: kept a year",
        parameters: [
          { name: 'hash', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'file', in: 'path', required: true, schema: { type: 'string' } },
        ],
        responses: {
          '200': { description: 'The file.', content: { 'text/javascript': {}, 'text/css': {} } },
          '404': json(errorBody(E.notFound.message), 'No such file in this build of the console.'),
        },
      },
    },
    '/openapi.json': {
      servers: ADMIN,
      get: {
        operationId: 'openapiAdmin',
        summary: 'This document',
        responses: { '200': { description: 'OpenAPI 3.1.', content: { 'application/json': {} } } },
      },
    },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'ipsift',
      version: VERSION,
      summary: 'IP classification (VPN, hosting, relay, Tor, CDN, proxies) and licensed database downloads',
      description:
        'Implements the ipsift API contract, version 2026.09.15. Every error a client can cause has the status and the exact message or result code listed here.',
    },
    servers: [{ url: '/', description: 'The public port (HOST:PORT), or PUBLIC_URL.' }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API key>' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        apiKeyQuery: { type: 'apiKey', in: 'query', name: 'apikey' },
        operator: {
          type: 'http',
          scheme: 'bearer',
          description: 'Authorization: Bearer <operator token> (iat_…, ipsift admin token create): admin.read for GET, admin.write for changes.',
        },
        geoipupdate: {
          type: 'http',
          scheme: 'basic',
          description: "Organisation account id and an API key with db.download (geoipupdate's AccountID and LicenseKey).",
        },
      },
    },
  };
}

/** The document's bytes, made once. */
let text: Buffer | null = null;

/**
 * GET `path`: the document, the same for every caller, so any cache may
 * keep it for a while; compressed when asked (about 40 KiB of JSON).
 */
export class OpenApiRoute {
  constructor(private readonly path: string) {}

  register(routes: RouteTable, edge: Edge): void {
    const { metrics } = edge;
    routes.get(
      this.path,
      (res) => {
        metrics.count(200);
        writePublicJsonType(res.writeStatus('200 OK')).end((text ??= staticBody(Buffer.from(JSON.stringify(openApiDocument())))));
      },
      { compress: true },
    );
  }
}
