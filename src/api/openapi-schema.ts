// The few builders the OpenAPI document's modules share (openapi.ts, openapi-operator.ts).

import { SCOPES } from '../wire/scopes.js';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const DATE = { type: 'string', format: 'date' };
export const DATE_TIME = { type: 'string', format: 'date-time' };

/** A closed object: every property required unless `required` says otherwise. */
export const object = (properties: Record<string, Schema>, required: string[] = Object.keys(properties), extra = false): Schema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: extra,
});

/** A serving node's (ROLE=serve) view of the builds published to the object store, on /readyz. */
export const REPLICA = object({
  published: { type: ['string', 'null'] },
  checked_at: { type: ['string', 'null'], format: 'date-time' },
  error: { type: ['string', 'null'] },
});

/** A response with a JSON body. */
export const json = (schema: Schema, description: string, headers?: Record<string, unknown>): Schema => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema } },
});

/** An API key as listings show it (no secret). */
export const apiKeyFields = {
  id: { type: 'string', format: 'uuid' },
  org_id: { type: 'string', format: 'uuid' },
  name: { type: 'string' },
  key_prefix: { type: 'string' },
  allowed_cidrs: { type: 'array', items: { type: 'string' } },
  allowed_scopes: { type: 'array', items: { enum: [...SCOPES] } },
  expires: { type: ['string', 'null'], format: 'date-time' },
  revoked_at: { type: ['string', 'null'], format: 'date-time' },
  created_at: DATE_TIME,
};

export const ADMIN = [{ url: 'http://127.0.0.1:8081', description: 'The admin port (ADMIN_HOST:ADMIN_PORT).' }];
