import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CATEGORIES, type Classification } from '../src/model/categories.js';
import { PLAN_TIERS, TIER_COUNT, detailsText, flagMask, flagsText, project } from '../src/model/projection.js';
import { prng } from '../scripts/gen-feeds.js';

const vpn = { provider: 'ExampleVPN', last_seen: '2026-11-01', confidence: 'high', method: 'server_list' };
const hosting = { provider: 'ExampleCloud', confidence: 'medium', last_seen: '2026-10-02' };
const resproxy = { provider: 'ExampleProxy', first_seen: '2026-01-01', last_seen: '2026-11-02', hits: 40, hits_days_pct: 50, providers_num: 2 };
const classified: Classification = { vpn, hosting, resproxy };

describe('plan projection', () => {
  test('no key and free carry ip and is_vpn only', () => {
    for (const plan of ['none', 'free']) {
      assert.deepEqual(project('1.2.3.4', classified, PLAN_TIERS[plan]), { ip: '1.2.3.4', is_vpn: true });
    }
  });

  test('starter adds is_hosting, is_relay, is_tor, is_cdn and the vpn object', () => {
    assert.deepEqual(project('1.2.3.4', classified, PLAN_TIERS.starter), {
      ip: '1.2.3.4',
      is_vpn: true,
      is_hosting: true,
      is_relay: false,
      is_tor: false,
      is_cdn: false,
      vpn,
    });
  });

  test('scale adds the proxy flags and the hosting, relay, tor and cdn objects', () => {
    assert.deepEqual(project('1.2.3.4', classified, PLAN_TIERS.scale), {
      ip: '1.2.3.4',
      is_vpn: true,
      is_hosting: true,
      is_relay: false,
      is_tor: false,
      is_cdn: false,
      is_resproxy: true,
      is_dcproxy: false,
      is_mobproxy: false,
      vpn,
      hosting,
      relay: {},
      tor: {},
      cdn: {},
    });
  });

  test('max adds the proxy detail objects, and nothing is null or missing', () => {
    const answer = project('1.2.3.4', classified, PLAN_TIERS.max);
    assert.deepEqual(answer, {
      ...project('1.2.3.4', classified, PLAN_TIERS.scale),
      resproxy,
      dcproxy: {},
      mobproxy: {},
    });
    assert.equal(Object.keys(answer).length, 17);
    assert.ok(Object.values(answer).every((v) => v !== null && v !== undefined));
  });

  test('an unclassified address (or bogon) on max: every flag false, every detail {}', () => {
    const answer = project('10.0.0.1', null, PLAN_TIERS.max);
    for (const c of CATEGORIES) {
      assert.equal(answer[`is_${c}`], false);
      assert.deepEqual(answer[c], {});
    }
  });

  test('keys come in the contract order: ip, flags, details', () => {
    assert.deepEqual(Object.keys(project('1.2.3.4', null, PLAN_TIERS.max)), ['ip', ...CATEGORIES.map((c) => `is_${c}`), ...CATEGORIES]);
  });

  test('the index pieces (flags text + details prefix) equal the projection for 2 000 random records', () => {
    const rnd = prng(31);
    for (let i = 0; i < 2000; i++) {
      const c: Classification = {};
      for (const cat of CATEGORIES) if (rnd() < 0.3) c[cat] = rnd() < 0.2 ? {} : { provider: `p${i}`, last_seen: '2026-01-02' };
      const json = CATEGORIES.map((cat) => (c[cat] ? JSON.stringify(c[cat]) : undefined));
      const d = detailsText(json);
      const mask = flagMask(json);
      for (let tier = 0; tier < TIER_COUNT; tier++) {
        const fragment = flagsText(tier, mask) + Buffer.from(d.text).subarray(0, d.ends[tier]).toString() + '}';
        assert.equal('{"ip":"9.9.9.9"' + fragment, JSON.stringify(project('9.9.9.9', c, tier)));
      }
    }
  });
});
