// Plans (DESIGN.md §4) from a JSON file: field tier, monthly quota, rate (token bucket) and
// the default overage limit of organisations on the plan. config/plans.json holds the
// defaults; PLANS_FILE points at another file.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PLAN_TIERS } from './projection.js';
import { IpsiftError } from '../errors.js';

export const DEFAULT_PLANS_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../config/plans.json');

export interface Rate {
  readonly perSecond: number;
  readonly burst: number;
}

export interface Plan {
  /** Identifier in the plans file (`plan.key` in the account answer). */
  readonly key: string;
  /** Contract tier name: free, starter, scale or max. */
  readonly tier: string;
  /** Field tier index (the projection). */
  readonly fieldTier: number;
  readonly quota: number;
  readonly rate: Rate;
  /** Overage limit of organisations that have not set their own: a number or none. */
  readonly defaultHardLimit: number | null;
}

/** Keyless callers, per source address. Their field tier is configuration (KEYLESS_TIER). */
export interface Keyless {
  readonly dailyCap: number;
  readonly rate: Rate;
}

export interface Plans {
  /**
   * null: keyless lookups are not limited (`"keyless": {"daily_cap": null, "rate": null}`),
   * for private deployments whose callers are all trusted. Nothing is then counted per
   * source address, so the peer is not even read.
   */
  readonly keyless: Keyless | null;
  readonly byKey: ReadonlyMap<string, Plan>;
  readonly file: string;
}

export class PlansError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PLANS', message, options);
  }
}

function count(where: string, v: unknown, min = 0): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw new PlansError(`${where} must be an integer ≥ ${min}`);
  return v;
}

function rateOf(where: string, v: unknown): Rate {
  const r = (v ?? {}) as { per_second?: unknown; burst?: unknown };
  const perSecond = r.per_second;
  if (typeof perSecond !== 'number' || !(perSecond > 0)) throw new PlansError(`${where}.per_second must be a number > 0`);
  return Object.freeze({ perSecond, burst: count(`${where}.burst`, r.burst, 1) });
}

function fieldTierOf(where: string, tier: unknown): number {
  if (typeof tier !== 'string' || !(tier in PLAN_TIERS) || tier === 'none') {
    throw new PlansError(`${where} must be one of free, starter, scale, max`);
  }
  return PLAN_TIERS[tier];
}

export function parsePlans(text: string, file: string): Plans {
  let doc: { keyless?: Record<string, unknown>; plans?: unknown };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch (e) {
    throw new PlansError(`${file}: not JSON (${(e as Error).message})`);
  }
  try {
    const k = doc.keyless ?? {};
    const unlimited = k.daily_cap === null && k.rate === null;
    if (!unlimited && (k.daily_cap === null || k.rate === null)) {
      throw new PlansError('keyless.daily_cap and keyless.rate are null together (keyless lookups not limited) or both given');
    }
    const keyless: Keyless | null = unlimited
      ? null
      : Object.freeze({ dailyCap: count('keyless.daily_cap', k.daily_cap, 0), rate: rateOf('keyless.rate', k.rate) });
    if (!Array.isArray(doc.plans) || doc.plans.length === 0) throw new PlansError('plans must be a non-empty array');
    const byKey = new Map<string, Plan>();
    doc.plans.forEach((raw: Record<string, unknown>, i: number) => {
      const where = `plans[${i}]`;
      const key = raw.key;
      if (typeof key !== 'string' || !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(key)) throw new PlansError(`${where}.key must match [a-z0-9][a-z0-9_-]*`);
      if (byKey.has(key)) throw new PlansError(`${where}.key ${key} is given twice`);
      const quota = count(`${where}.quota`, raw.quota);
      const hl = raw.hard_limit;
      const defaultHardLimit = hl === null || hl === undefined ? null : hl === 'quota' ? quota : count(`${where}.hard_limit`, hl);
      byKey.set(
        key,
        Object.freeze({
          key,
          tier: String(raw.tier),
          fieldTier: fieldTierOf(`${where}.tier`, raw.tier),
          quota,
          rate: rateOf(`${where}.rate`, raw.rate),
          defaultHardLimit,
        }),
      );
    });
    return Object.freeze({ keyless, byKey, file });
  } catch (e) {
    if (e instanceof PlansError) throw new PlansError(`${file}: ${e.message}`);
    throw e;
  }
}

export function loadPlans(file = DEFAULT_PLANS_FILE): Plans {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new PlansError(`cannot read plans file ${file}: ${(e as Error).message}`);
  }
  return parsePlans(text, file);
}
