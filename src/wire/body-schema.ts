// Request bodies checked against the very schemas the OpenAPI document publishes
// (request-bodies.ts): the subset of JSON Schema they use (type, enum, properties, required,
// additionalProperties: false, items, min/max length, items and value). A field the schema
// does not name is refused by name: a mistyped `allowed_scopes` must not yield a broader key.

export interface BodySchema {
  type?: string | readonly string[];
  enum?: readonly unknown[];
  properties?: Readonly<Record<string, BodySchema>>;
  required?: readonly string[];
  additionalProperties?: boolean;
  items?: BodySchema;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  format?: string;
  default?: unknown;
  description?: string;
}

/** A closed object; `required` lists the fields that must be present. */
export const closed = (properties: Record<string, BodySchema>, required: readonly string[] = []): BodySchema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

/** The first own field of `value` that the schema does not name, or null. */
export function unknownField(schema: BodySchema, value: object): string | null {
  const known = schema.properties ?? {};
  // for…in over a parsed body (no prototype keys of its own): no array of keys per batch.
  for (const k in value) if (Object.hasOwn(value, k) && !Object.hasOwn(known, k)) return k;
  return null;
}

const article = (word: string): string => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);

/** What a value of `schema` is, in words: "an integer from 1 to 86400", "an array of db.download or apikeys.manage". */
export function describeSchema(s: BodySchema): string {
  if (s.enum)
    return s.enum.length === 1 ? JSON.stringify(s.enum[0]) : `one of ${s.enum.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
  const types = s.type === undefined ? [] : typeof s.type === 'string' ? [s.type] : [...s.type];
  const words = types.map((t) => {
    if (t === 'null') return 'null';
    if (t === 'array') return s.items ? `an array of ${plural(s.items)}` : 'an array';
    if ((t === 'integer' || t === 'number') && s.minimum !== undefined && s.maximum !== undefined) return `${article(t)} from ${s.minimum} to ${s.maximum}`;
    if (t === 'string' && s.format === 'date-time') return 'an ISO 8601 date-time string';
    if (t === 'string' && s.minLength !== undefined && s.maxLength !== undefined) return `a string of ${s.minLength} to ${s.maxLength} characters`;
    if (t === 'string' && s.minLength === 1) return 'a non-empty string';
    return article(t);
  });
  return words.length === 0 ? 'a value' : words.join(' or ');
}

function plural(s: BodySchema): string {
  if (s.enum) return s.enum.map(String).join(' or ');
  return typeof s.type === 'string' ? `${s.type}s` : 'values';
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function fits(s: BodySchema, v: unknown): boolean {
  if (s.enum && !s.enum.includes(v)) return false;
  if (s.type !== undefined) {
    const t = typeOf(v);
    const allowed = typeof s.type === 'string' ? [s.type] : s.type;
    if (!allowed.includes(t) && !(t === 'integer' && allowed.includes('number'))) return false;
  }
  if (typeof v === 'string') {
    if (s.minLength !== undefined && [...v].length < s.minLength) return false;
    if (s.maxLength !== undefined && [...v].length > s.maxLength) return false;
    if (s.format === 'date-time' && Number.isNaN(Date.parse(v))) return false;
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) return false;
    if (s.maximum !== undefined && v > s.maximum) return false;
  }
  return true;
}

/**
 * Why `value` is not a body of `schema` ("unknown field "hardlimit": …", "name is required",
 * "lifetime_s must be an integer from 1 to 86400"), or null when it is. Unknown fields are
 * named first, so a typo is reported as such rather than as the field it was meant to be.
 */
export function bodyProblem(schema: BodySchema, value: unknown, path = ''): string | null {
  if (schema.properties) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return path === '' ? 'the body must be a JSON object' : `${path} must be a JSON object`;
    }
    if (schema.additionalProperties === false) {
      const extra = unknownField(schema, value);
      if (extra !== null) {
        const takes = Object.keys(schema.properties);
        const where = path === '' ? 'this body' : path;
        // The name as sent, cut short: a client chooses its length.
        return `unknown field ${JSON.stringify(((path === '' ? '' : `${path}.`) + extra).slice(0, 80))}: ${where} takes ${takes.length === 0 ? 'no fields' : takes.join(', ')}`;
      }
    }
    for (const k of schema.required ?? []) {
      if (!Object.hasOwn(value, k) || (value as Record<string, unknown>)[k] === undefined)
        return `${path === '' ? '' : `${path}.`}${k} is required: ${describeSchema(schema.properties[k])}`;
    }
    for (const [k, sub] of Object.entries(schema.properties)) {
      if (!Object.hasOwn(value, k)) continue;
      const problem = bodyProblem(sub, (value as Record<string, unknown>)[k], path === '' ? k : `${path}.${k}`);
      if (problem !== null) return problem;
    }
    return null;
  }
  if (!fits(schema, value)) return `${path} must be ${describeSchema(schema)}`;
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return `${path} must hold at least ${schema.minItems}`;
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return `${path} must hold at most ${schema.maxItems}`;
    if (schema.items) {
      // Items that are objects or arrays themselves are checked whole, field by field.
      const nested = schema.items.properties !== undefined || schema.items.items !== undefined;
      for (let i = 0; i < value.length; i++) {
        if (nested) {
          const problem = bodyProblem(schema.items, value[i], `${path}[${i}]`);
          if (problem !== null) return problem;
        } else if (!fits(schema.items, value[i])) return `${path}[${i}] must be ${describeSchema(schema.items)}, not ${shownValue(value[i])}`;
      }
    }
  }
  return null;
}

/** A value as a refusal shows it: a scalar's JSON (cut short), a container by its kind (never walked: it may nest deep). */
function shownValue(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object' && v !== null) return 'an object';
  return (JSON.stringify(v) ?? String(v)).slice(0, 40);
}

/** The most levels of arrays and objects a request body may nest (every body the API takes needs three). */
export const MAX_BODY_DEPTH = 16;

/** Whether a parsed body nests deeper than `limit`, found without recursion (a body may nest 100 000 deep). */
export function nestsDeeper(value: unknown, limit = MAX_BODY_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}
