// Validation of detail values as feeds give them (text), into their typed, canonical form.

import { CONFIDENCE_VALUES, DETAIL_FIELDS, METHOD_VALUES, type Category, type Detail, type DetailField } from '../model/categories.js';

export const ALL_DETAIL_FIELDS: readonly DetailField[] = [
  'provider',
  'confidence',
  'method',
  'first_seen',
  'last_seen',
  'hits',
  'hits_days_pct',
  'providers_num',
];

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function isCalendarDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
  return d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3];
}

function integerIn(s: string, min: number, max: number): number | null {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(s)) return null;
  const n = Number(s);
  return n >= min && n <= max ? n : null;
}

/** Returns the typed value, or a reason the text is not a valid value of the field. */
export function parseDetailValue(field: DetailField, text: string): { value: string | number } | { reason: string } {
  switch (field) {
    case 'provider':
      // eslint-disable-next-line no-control-regex
      if (text.length > 200 || /[\u0000-\u001f\u007f]/.test(text)) {
        return { reason: 'provider must be at most 200 characters without control characters' };
      }
      return { value: text };
    case 'confidence':
      return (CONFIDENCE_VALUES as readonly string[]).includes(text)
        ? { value: text }
        : { reason: `confidence must be one of ${CONFIDENCE_VALUES.join(', ')}: ${JSON.stringify(text)}` };
    case 'method':
      return (METHOD_VALUES as readonly string[]).includes(text)
        ? { value: text }
        : { reason: `method must be one of ${METHOD_VALUES.join(', ')}: ${JSON.stringify(text)}` };
    case 'first_seen':
    case 'last_seen':
      return isCalendarDate(text) ? { value: text } : { reason: `${field} must be a date YYYY-MM-DD: ${JSON.stringify(text)}` };
    case 'hits':
    case 'providers_num': {
      const n = integerIn(text, 0, 2 ** 31 - 1);
      return n === null ? { reason: `${field} must be a non-negative integer: ${JSON.stringify(text)}` } : { value: n };
    }
    case 'hits_days_pct': {
      const n = integerIn(text, 0, 100);
      return n === null ? { reason: `hits_days_pct must be an integer 0..100: ${JSON.stringify(text)}` } : { value: n };
    }
  }
}

/**
 * Builds a category's detail from raw field texts (empty text = absent). Returns the
 * detail in canonical field order, or the reason it is invalid.
 */
export function buildDetail(category: Category, raw: Partial<Record<DetailField, string>>): { detail: Detail } | { reason: string } {
  const allowed = DETAIL_FIELDS[category];
  for (const field of ALL_DETAIL_FIELDS) {
    const text = raw[field];
    if (text !== undefined && text !== '' && !allowed.includes(field)) {
      return { reason: `${field} does not apply to category ${category}` };
    }
  }
  const detail: Detail = {};
  for (const field of allowed) {
    const text = raw[field]?.trim();
    if (text === undefined || text === '') continue;
    const parsed = parseDetailValue(field, text);
    if ('reason' in parsed) return parsed;
    detail[field] = parsed.value;
  }
  return { detail };
}
