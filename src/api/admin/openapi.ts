// The operator's API (operator.ts) in the OpenAPI document: paths under /admin/v1 on the
// admin port, and the schemas of its answers (the same documents the CLI prints with --json).

import type { BodySchema } from '../../wire/body-schema.js';
import {
  ADMIN_TOKEN_CREATE_REQUEST,
  LICENCE_GRANT_REQUEST,
  OPERATOR_KEY_CREATE_REQUEST,
  ORGANISATION_CREATE_REQUEST,
  ORGANISATION_UPDATE_REQUEST,
} from '../../wire/request-bodies.js';
import { ADMIN, DATE_TIME, apiKeyFields, json, object, ref, type Schema } from '../openapi-schema.js';

const rc = (code: string, description: string): Schema => json(object({ rc: { const: code }, message: { type: 'string' } }), description);
const refusals = (write: boolean): Record<string, Schema> => ({
  '401': rc('UNAUTHORIZED', 'No operator token, an unknown one or a revoked one.'),
  ...(write ? { '403': rc('FORBIDDEN', 'The token lacks admin.write.') } : {}),
  '500': rc('INTERNAL', 'An unexpected failure.'),
  '503': rc('INTERNAL', 'The control database of a cluster cannot be reached now (with Retry-After).'),
});
const bad = rc('BAD_REQUEST', 'A body or field the service layer refuses; the message says why.');
const notFound = rc('NOT_FOUND', 'No such organisation (or it was deleted), key or licence.');

const pathParam = (name: string, description: string): Schema => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });
const orgId = pathParam('id', 'Organisation id.');
const limit = {
  name: 'limit',
  in: 'query',
  required: false,
  description: 'Entries a page: a whole number from 1, at most 200 taken (default 50).',
  schema: { type: 'integer', minimum: 1 },
};
const after = (what: string): Schema => ({
  name: 'after',
  in: 'query',
  required: false,
  description: `The next cursor of the page before (${what}); absent: the first page.`,
  schema: { type: 'string' },
});
const next = { type: ['string', 'null'], description: 'The cursor of the next page (pass as after), or null on the last page.' };

const body = (schema: BodySchema): Schema => ({ required: true, content: { 'application/json': { schema } } });

/** One operation on the admin port, authenticated by an operator token. */
function op(operationId: string, summary: string, write: boolean, responses: Record<string, Schema>, extra: Schema = {}): Schema {
  return { operationId, summary, security: [{ operator: [] }], ...extra, responses: { ...responses, ...refusals(write) } };
}

/** Requests presenting an organisation's or key's credential, and how many were refused. */
const activityCounts = {
  requests: { type: 'integer', minimum: 0 },
  limited: { type: 'integer', minimum: 0, description: 'Refused 429: rate limit or allowance.' },
  refused: {
    type: 'integer',
    minimum: 0,
    description: 'Refused with another 4xx: a source outside the key’s ranges, an input that is not an address, a body too large.',
  },
};

export function operatorSchemas(): Record<string, Schema> {
  const organisation = {
    id: { type: 'string', format: 'uuid' },
    account_id: { type: 'integer', minimum: 1 },
    name: { type: 'string' },
    plan: { type: 'string' },
    tier: { enum: ['free', 'starter', 'scale', 'max'] },
    quota: { type: 'integer', minimum: 0 },
    hard_limit: { type: ['integer', 'null'] },
    created_at: DATE_TIME,
    deleted_at: DATE_TIME,
  };
  const required = Object.keys(organisation).filter((k) => k !== 'deleted_at');
  const adminToken = {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    token_prefix: { type: 'string', description: 'The first characters of the secret, to tell tokens apart.' },
    scopes: { type: 'array', items: { enum: ['admin.read', 'admin.write'] } },
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    created_at: DATE_TIME,
    expires_at: { type: ['string', 'null'], format: 'date-time', description: 'When it stops working by itself (null: never).' },
  };
  return {
    Organisation: object(organisation, required),
    OrganisationWithKeys: object(
      { ...organisation, keys: { type: 'array', items: ref('ApiKey'), description: 'The first 200 keys, oldest first.' }, keys_next: next },
      [...required, 'keys', 'keys_next'],
    ),
    DeletedOrganisation: object({ ...organisation, keys_revoked: { type: 'integer', minimum: 0 }, licences_ended: { type: 'integer', minimum: 0 } }, [
      ...required,
      'deleted_at',
      'keys_revoked',
      'licences_ended',
    ]),
    OperatorKey: object({ ...apiKeyFields, key: { type: 'string', description: 'The secret, in this answer only.' } }),
    Licence: object({
      org_id: { type: 'string', format: 'uuid' },
      base: { type: 'string' },
      license_type: { enum: ['evaluation', 'subscription'] },
      starts: DATE_TIME,
      expires: DATE_TIME,
      renews_at: { type: ['string', 'null'], format: 'date-time' },
      notice_due_at: { type: ['string', 'null'], format: 'date-time' },
      standing: { enum: ['licensed', 'expired', 'unlicensed'] },
    }),
    Usage: object({
      org_id: { type: 'string', format: 'uuid' },
      plan: { type: 'string' },
      requests: { type: 'integer', minimum: 0 },
      quota: { type: 'integer', minimum: 0 },
      hard_limit: { type: ['integer', 'null'] },
      window_start: DATE_TIME,
      window_end: DATE_TIME,
    }),
    TrafficSample: object({
      at: DATE_TIME,
      requests_per_s: { type: 'number', minimum: 0 },
      client_errors_per_s: { type: 'number', minimum: 0, description: '4xx other than 429.' },
      rate_limited_per_s: { type: 'number', minimum: 0 },
      server_errors_per_s: { type: 'number', minimum: 0 },
      lookup_p50_ms: { type: ['number', 'null'] },
      lookup_p99_ms: { type: ['number', 'null'] },
      batch_p99_ms: { type: ['number', 'null'] },
    }),
    BuildManifest: object(
      {
        id: { type: 'string' },
        created: DATE_TIME,
        made_serving: { type: 'boolean', description: 'Whether the build was made the serving one when it was built.' },
        feeds: { type: 'array', items: object({ name: { type: 'string' }, bytes: { type: 'integer' }, sha256: { type: 'string' } }) },
        ranges: { type: 'object' },
        addresses: { type: 'object' },
        unknown_providers: { type: 'array', items: { type: 'string' } },
        index: { type: 'object' },
        exports: { type: 'object' },
        timings_ms: { type: 'object', additionalProperties: { type: 'number' } },
      },
      undefined,
      true,
    ),
    BuildComparison: object(
      {
        from: { type: 'string' },
        to: { type: 'string' },
        ranges: { type: 'integer', minimum: 0, description: 'Ranges changed in every category together.' },
        categories: {
          type: 'object',
          additionalProperties: object(
            {
              ranges: { type: 'integer', minimum: 0 },
              gained: { type: 'integer', minimum: 0 },
              lost: { type: 'integer', minimum: 0 },
              changed: { type: 'integer', minimum: 0, description: 'In the category before and after, with another detail.' },
              ipv4_addresses: { type: 'string', description: 'Decimal.' },
              ipv6_addresses: { type: 'string', description: 'Decimal.' },
            },
            ['ranges', 'gained', 'lost', 'changed', 'ipv4_addresses', 'ipv6_addresses'],
          ),
        },
        examples: {
          type: 'array',
          items: object(
            {
              category: { type: 'string' },
              first: { type: 'string' },
              last: { type: 'string' },
              before: { type: ['object', 'null'], description: "The category's detail before (null: not in it)." },
              after: { type: ['object', 'null'] },
            },
            ['category', 'first', 'last', 'before', 'after'],
          ),
        },
        more: { type: 'integer', minimum: 0, description: 'Changed ranges beyond the examples.' },
      },
      ['from', 'to', 'ranges', 'categories', 'examples', 'more'],
    ),
    AdminToken: object(adminToken, Object.keys(adminToken)),
    NewAdminToken: object({ ...adminToken, token: { type: 'string', description: 'The secret (iat_…), in this answer only.' } }, [
      ...Object.keys(adminToken),
      'token',
    ]),
    AuditEntry: object({
      id: { type: 'integer', minimum: 1 },
      at: DATE_TIME,
      actor: { type: 'string', description: 'cli:<OS user>, admin:<operator token id> or key:<API key id>.' },
      source: { type: 'string', description: 'The client address, or local for the CLI.' },
      action: { type: 'string' },
      org_id: { type: ['string', 'null'] },
      target: { type: ['string', 'null'] },
      detail: { type: 'object' },
    }),
  };
}

export function operatorPaths(): Record<string, Schema> {
  const admin = (item: Schema): Schema => ({ servers: ADMIN, ...item });
  /** An action's 202: it runs on after the answer. */
  const started = object({ status: { enum: ['started'] }, message: { type: 'string' } }, ['status', 'message']);
  return {
    '/admin/v1/organizations': admin({
      get: op(
        'adminListOrganisations',
        'The organisations in account-number order, a page at a time (deleted ones too with ?deleted=true)',
        false,
        { '200': json(object({ organizations: { type: 'array', items: ref('Organisation') }, next }), 'A page of organisations.'), '400': bad },
        {
          parameters: [
            { name: 'deleted', in: 'query', required: false, schema: { enum: ['true', 'false'] } },
            {
              name: 'q',
              in: 'query',
              required: false,
              description: 'Only organisations whose name holds this text (any case) or whose id begins with it; 1 to 200 characters.',
              schema: { type: 'string', minLength: 1, maxLength: 200 },
            },
            limit,
            after('an account number'),
          ],
        },
      ),
      post: op(
        'adminCreateOrganisation',
        'Create an organisation on a plan',
        true,
        { '201': json(ref('Organisation'), 'Created.'), '400': bad },
        {
          requestBody: body(ORGANISATION_CREATE_REQUEST),
        },
      ),
    }),
    '/admin/v1/organizations/{id}': admin({
      get: op(
        'adminShowOrganisation',
        'An organisation with its keys',
        false,
        { '200': json(ref('OrganisationWithKeys'), 'The organisation.'), '404': notFound },
        { parameters: [orgId] },
      ),
      post: op(
        'adminUpdateOrganisation',
        'Change the plan and/or the overage limit (a number, null for none, or "default")',
        true,
        { '200': json(ref('Organisation'), 'Changed.'), '400': bad, '404': notFound },
        {
          parameters: [orgId],
          requestBody: body(ORGANISATION_UPDATE_REQUEST),
        },
      ),
      delete: op(
        'adminDeleteOrganisation',
        'Delete: keys revoked and licences ended at once; history and audit kept',
        true,
        { '200': json(ref('DeletedOrganisation'), 'Deleted.'), '404': notFound },
        { parameters: [orgId] },
      ),
    }),
    '/admin/v1/organizations/{id}/keys': admin({
      get: op(
        'adminListKeys',
        "An organisation's keys (no secrets), oldest first, a page at a time",
        false,
        { '200': json(object({ apikeys: { type: 'array', items: ref('ApiKey') }, next }), 'A page of keys.'), '400': bad, '404': notFound },
        { parameters: [orgId, limit, after('a key id')] },
      ),
      post: op(
        'adminCreateKey',
        'Create a key; its secret is in this answer only',
        true,
        {
          '201': json(ref('OperatorKey'), 'Created.'),
          '400': bad,
          '404': notFound,
          '409': rc('CONFLICT', 'The organisation holds MAX_KEYS_PER_ORG live keys already.'),
        },
        {
          parameters: [orgId],
          requestBody: body(OPERATOR_KEY_CREATE_REQUEST),
        },
      ),
    }),
    '/admin/v1/keys/{id}': admin({
      get: op(
        'adminShowKey',
        'A key (no secret)',
        false,
        { '200': json(ref('ApiKey'), 'The key.'), '404': notFound },
        { parameters: [pathParam('id', 'Key id.')] },
      ),
      delete: op(
        'adminRevokeKey',
        'Revoke a key',
        true,
        { '200': json(ref('ApiKey'), 'Revoked.'), '404': notFound },
        { parameters: [pathParam('id', 'Key id.')] },
      ),
    }),
    '/admin/v1/keys/{id}/rotate': admin({
      post: op(
        'adminRotateKey',
        'A new secret for a key; the old one stops working',
        true,
        { '200': json(ref('OperatorKey'), 'Rotated.'), '400': bad, '404': notFound, '409': rc('CONFLICT', 'The key is revoked.') },
        { parameters: [pathParam('id', 'Key id.')] },
      ),
    }),
    '/admin/v1/organizations/{id}/licenses': admin({
      get: op(
        'adminListLicences',
        "An organisation's licences",
        false,
        { '200': json(object({ licenses: { type: 'array', items: ref('Licence') } }), 'The licences.'), '404': notFound },
        { parameters: [orgId] },
      ),
      post: op(
        'adminGrantLicence',
        'Grant (or replace) a licence for a database base',
        true,
        { '201': json(ref('Licence'), 'Granted.'), '400': bad, '404': notFound },
        {
          parameters: [orgId],
          requestBody: body(LICENCE_GRANT_REQUEST),
        },
      ),
    }),
    '/admin/v1/organizations/{id}/licenses/{base}': admin({
      delete: op(
        'adminRevokeLicence',
        'End a licence',
        true,
        { '200': json(object({ revoked: object({ org_id: { type: 'string' }, base: { type: 'string' } }) }), 'Ended.'), '404': notFound },
        { parameters: [orgId, pathParam('base', 'Database base.')] },
      ),
    }),
    '/admin/v1/organizations/{id}/usage': admin({
      get: op(
        'adminUsage',
        "This calendar month's requests against quota and overage limit",
        false,
        { '200': json(ref('Usage'), 'The usage.'), '404': notFound },
        { parameters: [orgId] },
      ),
    }),
    '/admin/v1/organizations/{id}/downloads': admin({
      get: op(
        'adminDownloads',
        "An organisation's download history, newest first",
        false,
        { '200': json(object({ downloads: { type: 'array', items: ref('Download') } }), 'The history.'), '400': bad, '404': notFound },
        {
          parameters: [orgId, limit],
        },
      ),
    }),
    '/admin/v1/plans': admin({
      get: op('adminPlans', 'The plans of PLANS_FILE and the database bases a licence may name', false, {
        '200': json(
          object({
            plans: {
              type: 'array',
              items: object({
                plan: { type: 'string' },
                tier: { type: 'string' },
                quota: { type: 'integer', minimum: 0 },
                default_hard_limit: { type: ['integer', 'null'] },
              }),
            },
            license_bases: { type: 'array', items: { type: 'string' } },
          }),
          'The plans and bases.',
        ),
      }),
    }),
    '/admin/v1/token': admin({
      get: op('adminToken', 'The operator token of the request: its id, name and scopes', false, {
        '200': json(
          object({
            id: { type: 'string', format: 'uuid' },
            name: { type: 'string' },
            scopes: { type: 'array', items: { enum: ['admin.read', 'admin.write'] } },
          }),
          'The token.',
        ),
      }),
    }),
    '/admin/v1/tokens': admin({
      get: op('adminListTokens', 'The operator tokens (no secrets), oldest first, revoked ones included', false, {
        '200': json(object({ tokens: { type: 'array', items: ref('AdminToken') } }), 'The tokens.'),
      }),
      post: op(
        'adminCreateToken',
        'Create an operator token (admin.write brings admin.read); audited',
        true,
        {
          '201': json(ref('NewAdminToken'), 'Created.'),
          '400': bad,
        },
        { requestBody: body(ADMIN_TOKEN_CREATE_REQUEST) },
      ),
    }),
    '/admin/v1/tokens/{id}': admin({
      delete: op(
        'adminRevokeToken',
        'Revoke an operator token at once (again: no change); audited',
        true,
        {
          '200': json(ref('AdminToken'), 'Revoked.'),
          '404': notFound,
          '409': rc('CONFLICT', 'The last live admin.write token: create another first, or revoke it from the command line.'),
        },
        { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }] },
      ),
    }),
    '/admin/v1/settings': admin({
      get: op('adminSettings', 'The configuration the process runs with: each setting, its value and where it came from; credentials never shown', false, {
        '200': json(
          object({
            config_file: { type: ['string', 'null'], description: "CONFIG_FILE's path; null: none." },
            settings: {
              type: 'array',
              items: object(
                {
                  name: { type: 'string' },
                  group: { type: 'string' },
                  value: { type: ['string', 'null'], description: 'As given, or the default; a URL with a password shows it masked.' },
                  origin: { enum: ['environment', 'file', 'default'] },
                  default: { type: 'string', description: 'What the default is where it is not a value (cores, none).' },
                  password: { enum: ['set'], description: 'The value is a URL whose password is masked.' },
                },
                ['name', 'group', 'value', 'origin'],
              ),
            },
            credentials: { type: 'array', items: object({ name: { type: 'string' }, set: { type: 'boolean' } }, ['name', 'set']) },
          }),
          'The settings.',
        ),
      }),
    }),
    '/admin/v1/activity': admin({
      get: op(
        'adminActivity',
        "Who this server served and refused over the window, most refused first (429s, then other 4xx), and each key's last use and source; with org_id, every key of that organisation",
        false,
        {
          '200': json(
            object({
              window: { enum: ['1h', '6h', '24h'] },
              organizations: {
                type: 'array',
                description: 'Ten at most (the one asked for, with org_id).',
                items: object({ id: { type: 'string' }, name: { type: ['string', 'null'] }, ...activityCounts }),
              },
              keys: {
                type: 'array',
                description: 'Ten at most; with org_id, every key of the organisation.',
                items: object({
                  id: { type: 'string' },
                  name: { type: ['string', 'null'] },
                  org_id: { type: 'string' },
                  org_name: { type: ['string', 'null'] },
                  ...activityCounts,
                  last_used_at: {
                    type: ['string', 'null'],
                    format: 'date-time',
                    description: 'As this server saw it, to the second; null: not in the last day’s record.',
                  },
                  last_used_from: { type: ['string', 'null'], description: 'The source address of that use.' },
                }),
              },
            }),
            'The activity.',
          ),
          '400': rc('BAD_REQUEST', 'A window other than 1h, 6h or 24h, or another parameter.'),
          '404': notFound,
        },
        {
          parameters: [
            {
              name: 'window',
              in: 'query',
              required: false,
              description: '1h (the default), 6h or 24h, in ten-minute spans.',
              schema: { enum: ['1h', '6h', '24h'] },
            },
            { name: 'org_id', in: 'query', required: false, description: "One organisation's keys, each, used or not.", schema: { type: 'string' } },
          ],
        },
      ),
    }),
    '/admin/v1/overview': admin({
      get: op(
        'adminOverview',
        'What is wrong, the serving build and its age, each front-end thread, the HTTP server and runtime, the process (memory, CPU, files, batch pool, event loops), and the traffic of the last hour, 6 hours or day',
        false,
        {
          '400': rc('BAD_REQUEST', 'A window other than 1h, 6h or 24h, or another parameter.'),
          '200': json(
            object({
              version: { type: 'string' },
              runtime: { type: 'string' },
              http_server: { enum: ['uws', 'bun', 'node'] },
              started_at: DATE_TIME,
              ready: { type: 'boolean' },
              health: {
                type: 'array',
                description: 'What is wrong, most pressing first (empty: nothing). Sources in trouble are in GET /admin/v1/sources.',
                items: object({
                  kind: { enum: ['not_ready', 'build_old', 'accounting_degraded', 'replica_behind', 'replica_unchecked'] },
                  message: { type: 'string' },
                  see: { type: 'string', description: "The console's page with the detail." },
                }),
              },
              draining: { type: 'boolean' },
              build: { oneOf: [{ type: 'null' }, object({ id: { type: 'string' }, loaded_at: DATE_TIME, age_s: { type: 'integer', minimum: 0 } })] },
              last_published_at: { type: ['string', 'null'], format: 'date-time' },
              lookups_without_build: {
                enum: [500, 503],
                description:
                  'What a lookup answers while no build serves: 503 with Retry-After where sources are configured (their first fetch is under way), else 500.',
              },
              threads: {
                type: 'array',
                items: object({ thread: { type: 'integer', minimum: 0 }, listening: { type: 'boolean' }, serving: { type: 'boolean' } }),
              },
              process: object(
                {
                  rss_bytes: { type: 'integer', minimum: 0 },
                  heap_used_bytes: { type: 'integer', minimum: 0 },
                  external_bytes: { type: 'integer', minimum: 0 },
                  cpu_seconds: { type: 'number', minimum: 0 },
                  cpu_cores: {
                    type: ['number', 'null'],
                    description: "Cores' worth of CPU used since the reading before (at least 1 s before); null at the first.",
                  },
                  open_fds: { type: ['integer', 'null'] },
                  batch: object({
                    workers: { type: 'integer', minimum: 0 },
                    running: { type: 'integer', minimum: 0 },
                    queued: { type: 'integer', minimum: 0 },
                    utilization: { type: 'number', minimum: 0, maximum: 1, description: "The share of the workers' time spent answering since start." },
                  }),
                  threads: {
                    type: 'array',
                    items: object({
                      thread: { type: 'integer', minimum: 0 },
                      loop_delay_ms: object({ p50: { type: 'number' }, p99: { type: 'number' }, max: { type: 'number' } }),
                    }),
                  },
                },
                ['rss_bytes', 'heap_used_bytes', 'external_bytes', 'cpu_seconds', 'cpu_cores', 'open_fds', 'batch', 'threads'],
              ),
              traffic: object({
                window: { enum: ['1h', '6h', '24h'] },
                period_s: { type: 'number', description: 'What one point stands for: 10 s over an hour, a minute over 6 hours, 4 minutes over a day.' },
                samples: {
                  type: 'array',
                  items: ref('TrafficSample'),
                  description:
                    'Oldest first, at most 360, none for periods the server was down. Merged periods average their rates and p50, and keep their worst p99. Kept across restarts where ADMIN_PORT is not 0.',
                },
              }),
              routes: {
                type: 'array',
                description:
                  'Traffic per route family (lookup, batch, account, database, files) over the window, or since this process started where it is younger; the busiest first.',
                items: object(
                  {
                    family: { enum: ['lookup', 'batch', 'account', 'database', 'files'] },
                    requests: { type: 'integer', minimum: 0 },
                    per_s: { type: 'number', minimum: 0 },
                    p50_ms: { type: ['number', 'null'] },
                    p99_ms: { type: ['number', 'null'] },
                  },
                  ['family', 'requests', 'per_s', 'p50_ms', 'p99_ms'],
                ),
              },
            }),
            'The overview.',
          ),
        },
        {
          parameters: [
            {
              name: 'window',
              in: 'query',
              required: false,
              description: 'The traffic shown: 1h (the default), 6h or 24h.',
              schema: { enum: ['1h', '6h', '24h'] },
            },
          ],
        },
      ),
    }),
    '/admin/v1/serving-log': admin({
      get: op('adminServingLog', 'Which build served from when to when on this node, newest first (kept when builds are pruned)', false, {
        '200': json(
          object({
            spans: {
              type: 'array',
              items: object({
                build: { type: 'string' },
                from: DATE_TIME,
                to: { type: ['string', 'null'], format: 'date-time', description: 'When the next build took over (null: it serves still).' },
                node: { type: 'string', description: 'The host that made it serving.' },
              }),
            },
          }),
          'The spans.',
        ),
      }),
    }),
    '/admin/v1/log': admin({
      get: op(
        'adminLogTail',
        "This process's last warnings and errors (at most 200), newest first, as they went to the log",
        false,
        {
          '200': json(
            object({
              keep: { type: 'integer', description: 'How many lines are kept.' },
              lines: {
                type: 'array',
                items: object({
                  time: DATE_TIME,
                  level: { enum: ['warn', 'error'] },
                  msg: { type: 'string' },
                  fields: { type: 'object', description: "The line's other fields, as logged." },
                }),
              },
            }),
            'The lines.',
          ),
          '400': bad,
        },
        {
          parameters: [
            {
              name: 'level',
              in: 'query',
              required: false,
              description: 'warn (the default): warnings and errors; error: errors only.',
              schema: { enum: ['warn', 'error'] },
            },
          ],
        },
      ),
    }),
    '/admin/v1/builds': admin({
      get: op('adminBuilds', 'The builds, newest first, the serving one marked', false, {
        '200': json(
          object({
            builds: {
              type: 'array',
              items: object({
                id: { type: 'string' },
                current: { type: 'boolean' },
                created: DATE_TIME,
                bytes: { type: 'integer', minimum: 0 },
                compared: { type: 'boolean', description: 'Whether it recorded what it changed against the build before it (/admin/v1/builds/{id}/changes).' },
              }),
            },
          }),
          'The builds.',
        ),
      }),
      post: op(
        'adminBuildNow',
        'Build now from the imported feeds, make it serving and publish it, as the daily run does, whatever was built today; audited',
        true,
        {
          '202': json(started, 'Started: GET /admin/v1/builds lists the build once done.'),
          '400': bad,
          '409': rc('CONFLICT', 'A build is running on this data directory, or this node does not build (ROLE=serve).'),
        },
      ),
    }),
    '/admin/v1/sources/refresh': admin({
      post: op('adminRefreshSources', 'Fetch every configured source now, due or not, and build when any changed; audited', true, {
        '202': json(started, 'Started: GET /admin/v1/sources shows each source as it ends.'),
        '400': bad,
        '409': rc('CONFLICT', 'A refresh or a build is running on this data directory, or no sources are configured.'),
      }),
    }),
    '/admin/v1/sources/{name}/refresh': admin({
      post: op(
        'adminRefreshSource',
        'Fetch one configured source now, due or not, and build when it changed; audited',
        true,
        {
          '202': json(started, 'Started: GET /admin/v1/sources shows it when it ends.'),
          '400': bad,
          '404': rc('NOT_FOUND', 'No source of this name is configured here.'),
          '409': rc('CONFLICT', 'A refresh or a build is running on this data directory, or the source is disabled.'),
        },
        { parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }] },
      ),
    }),
    ...Object.fromEntries(
      (['disable', 'enable'] as const).map((verb) => [
        `/admin/v1/sources/{name}/${verb}`,
        admin({
          post: op(
            verb === 'disable' ? 'adminDisableSource' : 'adminEnableSource',
            verb === 'disable'
              ? 'Set a source aside: neither fetched nor built from until enabled; a build without it follows; audited when it changed'
              : 'Take a disabled source back: fetched and built from again; a build with it follows; audited when it changed',
            true,
            {
              '200': json(
                object({
                  source: { type: 'string' },
                  disabled: { type: 'boolean' },
                  since: { ...DATE_TIME, type: ['string', 'null'] },
                  by: { type: ['string', 'null'] },
                  message: { type: 'string' },
                }),
                `Done (or already ${verb}d: nothing changed).`,
              ),
              '400': bad,
              '404': rc('NOT_FOUND', 'No source of this name is configured here.'),
            },
            { parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }] },
          ),
        }),
      ]),
    ),
    '/admin/v1/builds/{id}': admin({
      get: op(
        'adminBuild',
        "A build's report: its manifest (feeds, ranges and addresses per category, index, exports, stage timings)",
        false,
        { '200': json(ref('BuildManifest'), 'The manifest.'), '404': rc('NOT_FOUND', 'No build has this id.') },
        { parameters: [pathParam('id', 'Build id (YYYYMMDD-n).')] },
      ),
    }),
    '/admin/v1/builds/{id}/changes': admin({
      get: op(
        'adminBuildChanges',
        'What a build changed against the build before it, recorded when it was made: per category the ranges gained, lost and with another detail, and the first of them',
        false,
        {
          '200': json(ref('BuildComparison'), 'The comparison.'),
          '404': rc('NOT_FOUND', 'No build has this id, or it has no comparison (the first build here).'),
        },
        { parameters: [pathParam('id', 'Build id (YYYYMMDD-n).')] },
      ),
    }),
    '/admin/v1/builds/{id}/serve': admin({
      post: op(
        'adminServeBuild',
        'Make a build the serving one, after checking its index against its manifest (as ipsift builds use)',
        true,
        {
          '200': json(object({ current: { type: 'string' }, message: { type: 'string' } }), 'Serving; every front-end thread switches within INDEX_POLL_MS.'),
          '400': bad,
          '404': rc('NOT_FOUND', 'No build has this id.'),
          '409': rc('CONFLICT', 'The build is damaged; the serving build is unchanged.'),
          '429': rc('RATE_LIMITED', 'Another build is being checked and served (one at a time); retry after Retry-After seconds.'),
        },
        { parameters: [pathParam('id', 'Build id (YYYYMMDD-n).')] },
      ),
    }),
    '/admin/v1/feeds': admin({
      get: op('adminFeeds', 'The imported feeds with their evidence kind, priority, size and import time', false, {
        '200': json(
          object({
            feeds: {
              type: 'array',
              items: object({
                name: { type: 'string' },
                bytes: { type: 'integer', minimum: 0 },
                evidence: { type: 'string' },
                priority: { type: 'integer' },
                source: { type: ['string', 'null'] },
                imported_at: DATE_TIME,
              }),
            },
          }),
          'The feeds.',
        ),
      }),
    }),
    '/admin/v1/answers/{ip}': admin({
      get: op(
        'adminPlanAnswers',
        "The serving build's answer for an address as a keyless caller and a caller on each plan sees it, now or as of a time; nothing is counted",
        false,
        {
          '200': json(
            object(
              {
                ip: { type: 'string' },
                build: { type: ['string', 'null'], description: 'The build that answered (with at: the one serving then).' },
                at: { ...DATE_TIME, description: 'With at: the time asked.' },
                as_of: { ...DATE_TIME, description: 'With at: when the build that answered then began to serve.' },
                keyless: object({ tier: { type: 'string' }, answer: ref('LookupResult') }),
                plans: {
                  type: 'array',
                  items: object({
                    plan: { type: 'string' },
                    tier: { type: 'string' },
                    answer: { anyOf: [ref('LookupResult'), { type: 'string', description: 'With at: why the timeline does not say.' }] },
                  }),
                },
              },
              ['ip', 'build', 'keyless', 'plans'],
            ),
            'The answers.',
          ),
          '400': json(
            object({
              error: { anyOf: [{ const: 'not a valid IP address' }, { type: 'string', pattern: '^(at |no history is kept here yet|unknown parameter)' }] },
            }),
            'Not an IP address, an at refused, or an unknown parameter (the message says which).',
          ),
        },
        {
          parameters: [
            pathParam('ip', 'An IPv4 or IPv6 address.'),
            {
              name: 'at',
              in: 'query',
              required: false,
              description: 'The answers as of this RFC 3339 time, from the timeline of answers (every plan, history or not: this is the operator asking).',
              schema: { type: 'string', format: 'date-time' },
            },
          ],
        },
      ),
    }),
    '/admin/v1/audit': admin({
      get: op(
        'adminAudit',
        'The audit log, newest first',
        false,
        { '200': json(object({ entries: { type: 'array', items: ref('AuditEntry') } }), 'The entries.'), '400': bad },
        {
          parameters: [
            { name: 'org_id', in: 'query', required: false, schema: { type: 'string' } },
            { name: 'before', in: 'query', required: false, description: 'Entries older than this id.', schema: { type: 'integer' } },
            limit,
          ],
        },
      ),
    }),
  };
}
