// The scopes an API key may carry, named once: what validates a key's scopes, the request
// bodies' schemas and the OpenAPI documents all read this list.

export const SCOPES = ['db.download', 'apikeys.manage', 'changes.read'] as const;
export type Scope = (typeof SCOPES)[number];
