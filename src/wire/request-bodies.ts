// Every JSON request body ipsift takes, once: the handlers check bodies against these
// (body-schema.ts) and the OpenAPI document publishes them, so the two cannot drift. Each is
// closed (additionalProperties: false): a field not named here is refused by name.

import { type BodySchema, closed } from './body-schema.js';
import { SCOPES } from './scopes.js';

export const SCOPE_LIST: BodySchema = { type: 'array', items: { enum: [...SCOPES] } };
export const CIDR_LIST: BodySchema = { type: 'array', items: { type: 'string' } };
export const EXPIRY: BodySchema = { type: ['string', 'null'], format: 'date-time' };
const NAME: BodySchema = { type: 'string', minLength: 1 };

/** POST /batch (interface.md §2.3). */
export const BATCH_REQUEST = closed(
  { ips: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 1000 }, at: { type: 'string', format: 'date-time' } },
  ['ips'],
);

/** POST /api/v1/iam/apikeys: the contract's `name`, and the key's scopes, ranges and expiry. */
export const KEY_CREATE_REQUEST = closed({ name: NAME, allowed_scopes: SCOPE_LIST, allowed_cidrs: CIDR_LIST, expires: EXPIRY }, ['name']);

/** A token's lifetime when the request names none, and the longest it may ask for (seconds). */
export const DEFAULT_TOKEN_LIFETIME_S = 15 * 60;
export const MAX_TOKEN_LIFETIME_S = 24 * 60 * 60;
/** POST /api/v1/auth/token: a subset of the key's scopes and a lifetime (the body may be empty). */
export const TOKEN_REQUEST = closed({
  scopes: SCOPE_LIST,
  lifetime_s: { type: 'integer', minimum: 1, maximum: MAX_TOKEN_LIFETIME_S, default: DEFAULT_TOKEN_LIFETIME_S },
});

/** POST /admin/v1/organizations. */
export const ORGANISATION_CREATE_REQUEST = closed({ name: { type: 'string' }, plan: { type: 'string' } }, ['name', 'plan']);

/** POST /admin/v1/organizations/{id}: the plan and/or the overage limit (a number, null for none, or "default"). */
export const ORGANISATION_UPDATE_REQUEST = closed({ plan: { type: 'string' }, hard_limit: { type: ['integer', 'null', 'string'] } });

/** POST /admin/v1/organizations/{id}/keys. */
export const OPERATOR_KEY_CREATE_REQUEST = closed({ name: { type: 'string' }, allowed_scopes: SCOPE_LIST, allowed_cidrs: CIDR_LIST, expires: EXPIRY }, [
  'name',
]);

/** POST /admin/v1/tokens: an operator token's name, scopes (admin.write brings admin.read) and optional expiry. */
export const ADMIN_TOKEN_CREATE_REQUEST = closed(
  { name: NAME, scopes: { type: 'array', items: { enum: ['admin.read', 'admin.write'] }, minItems: 1 }, expires: EXPIRY },
  ['name', 'scopes'],
);

/** POST /admin/v1/organizations/{id}/licenses. */
export const LICENCE_GRANT_REQUEST = closed(
  {
    base: { type: 'string' },
    license_type: { enum: ['evaluation', 'subscription'] },
    starts: { type: 'string' },
    expires: { type: 'string' },
    renews_at: { type: ['string', 'null'] },
    notice_due_at: { type: ['string', 'null'] },
  },
  ['base', 'license_type', 'starts', 'expires'],
);

/** A POST that takes no fields (rotations, making a build serve): an empty body or {}. */
export const NO_FIELDS = closed({});
