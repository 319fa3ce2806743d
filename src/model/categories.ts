// The eight categories and their detail fields (interface.md §2.1, DESIGN.md §3).

export const CATEGORIES = ['vpn', 'hosting', 'relay', 'tor', 'cdn', 'resproxy', 'dcproxy', 'mobproxy'] as const;
export type Category = (typeof CATEGORIES)[number];

export type DetailField = 'provider' | 'confidence' | 'method' | 'first_seen' | 'last_seen' | 'hits' | 'hits_days_pct' | 'providers_num';

/** Detail fields per category, in the order they appear in answers. */
export const DETAIL_FIELDS: Readonly<Record<Category, readonly DetailField[]>> = {
  vpn: ['provider', 'last_seen', 'confidence', 'method'],
  hosting: ['provider', 'confidence', 'last_seen'],
  relay: ['provider', 'confidence', 'last_seen'],
  tor: ['provider', 'confidence', 'last_seen'],
  cdn: ['provider', 'confidence', 'last_seen'],
  resproxy: ['provider', 'first_seen', 'last_seen', 'hits', 'hits_days_pct', 'providers_num'],
  dcproxy: ['provider', 'first_seen', 'last_seen', 'hits', 'hits_days_pct', 'providers_num'],
  mobproxy: ['provider', 'first_seen', 'last_seen', 'hits', 'hits_days_pct', 'providers_num'],
};

export const CONFIDENCE_VALUES = ['low', 'medium', 'high'] as const;
export const METHOD_VALUES = ['server_list', 'exit_probe', 'traffic', 'asn'] as const;

export type DetailValue = string | number;
/** One category's detail for one network: only the fields that are known. */
export type Detail = Partial<Record<DetailField, DetailValue>>;

/** What the dataset says about one address: the details of the categories it is in. */
export type Classification = Partial<Record<Category, Detail>>;

export function isCategory(s: string): s is Category {
  return (CATEGORIES as readonly string[]).includes(s);
}
