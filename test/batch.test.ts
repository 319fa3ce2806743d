// Batch semantics straight from answerBatch: which strings collapse, which are answered
// within a budget, and the outcome buffer (a reused output slot holds the same bytes as a
// fresh buffer; when it does not fit, a fresh buffer carries it).

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { importFeed } from '../src/feeds/import.js';
import { answerBatch, decodeOutcome } from '../src/lookup/batch.js';
import { ERRORS } from '../src/wire/errors.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { TIER_MAX } from '../src/model/projection.js';
import { buildIndex, tempDir, writeFile } from './helpers.js';

function outcome(index: RangeIndex | null, ips: string[], budget?: number) {
  const { status, answered, body } = decodeOutcome(answerBatch(JSON.stringify({ ips }), index, TIER_MAX, budget));
  const json = JSON.parse(Buffer.from(body).toString('utf8')) as { results: Record<string, { ip: string }>; errors: Record<string, unknown> };
  return { status, answered, ...json };
}

describe('batch semantics', () => {
  let index: RangeIndex;
  before(async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'f.csv', 'network,category,provider\n81.7.0.0/16,vpn,Alpha\n2a01:4f8::/32,hosting,Beta\n') });
    index = await buildIndex(dataDir);
  });

  test('only equal strings collapse: other spellings of one address are answered under their own keys', () => {
    const spellings = [
      '2a01:4f8:c012::1',
      '2A01:4F8:C012::1',
      '2a01:4f8:c012:0::1',
      '2a01:04f8:c012::0001',
      '81.7.3.20',
      '::ffff:81.7.3.20',
      '::FFFF:81.7.3.20',
    ];
    const o = outcome(index, [...spellings, ...[...spellings].reverse(), 'x', 'x']);
    assert.equal(o.answered, spellings.length);
    assert.deepEqual(Object.keys(o.results).sort(), [...spellings].sort());
    assert.equal(o.results['2A01:4F8:C012::1'].ip, '2a01:4f8:c012::1');
    assert.equal(o.results['::FFFF:81.7.3.20'].ip, '::ffff:81.7.3.20');
    assert.deepEqual(Object.keys(o.errors), ['x']);
  });

  test('1000 distinct addresses are all answered; 1000 copies of one are answered once', () => {
    const distinct = Array.from({ length: 1000 }, (_, i) => (i % 2 ? `81.7.${i >> 8}.${i & 255}` : `2a01:4f8::${i.toString(16)}`));
    const all = outcome(index, distinct);
    assert.equal(all.answered, 1000);
    assert.deepEqual(Object.keys(all.results), distinct);
    const one = outcome(index, Array(1000).fill('81.7.3.20'));
    assert.equal(one.answered, 1);
    assert.deepEqual(Object.keys(one.results), ['81.7.3.20']);
  });

  test('a budget counts distinct addresses in input order; repeats of an answered address stay answered', () => {
    const o = outcome(index, ['81.7.0.1', '81.7.0.1', 'bad', '81.7.0.2', '81.7.0.3', '81.7.0.2', '81.7.0.1', 'bad', '81.7.0.4'], 2);
    assert.equal(o.answered, 2);
    assert.deepEqual(Object.keys(o.results), ['81.7.0.1', '81.7.0.2']);
    const refused = JSON.parse(ERRORS.allowanceSpent.entry.toString()) as unknown;
    assert.deepEqual(o.errors, { bad: JSON.parse(ERRORS.notAddress.entry.toString()), '81.7.0.3': refused, '81.7.0.4': refused });
  });

  test('with no index every distinct address is one lookup-failed error', () => {
    const o = outcome(null, ['81.7.0.1', '81.7.0.1', '2a01:4f8::1', 'bad']);
    assert.equal(o.answered, 0);
    assert.deepEqual(o.results, {});
    const failed = JSON.parse(ERRORS.lookupFailed.entry.toString()) as unknown;
    assert.deepEqual(o.errors, { '81.7.0.1': failed, '2a01:4f8::1': failed, bad: JSON.parse(ERRORS.notAddress.entry.toString()) });
  });
});

describe('batch outcome buffers', () => {
  test('a slot that fits holds the outcome; one that does not is left alone', async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'f.csv', 'network,category,provider\n81.7.0.0/16,vpn,Alpha\n2a01:4f8::/32,hosting,Beta\n') });
    const index = await buildIndex(dataDir);
    const body = JSON.stringify({ ips: ['81.7.3.20', '2a01:4f8::1', 'nope', '81.7.3.20', '8.8.8.8'] });
    const fresh = answerBatch(body, index, TIER_MAX);
    const slot = Buffer.from(new SharedArrayBuffer(1 << 16));
    const inSlot = answerBatch(body, index, TIER_MAX, undefined, undefined, slot);
    assert.equal(inSlot.buffer, slot.buffer, 'written into the slot');
    assert.equal(inSlot.byteOffset, 0);
    assert.deepEqual(Buffer.from(inSlot), Buffer.from(fresh));
    const small = Buffer.from(new SharedArrayBuffer(64));
    const tooBig = answerBatch(body, index, TIER_MAX, undefined, undefined, small);
    assert.notEqual(tooBig.buffer, small.buffer, 'a fresh buffer when the slot is too small');
    assert.deepEqual(Buffer.from(tooBig), Buffer.from(fresh));
    assert.ok(
      small.every((b) => b === 0),
      'the small slot was not written',
    );
  });
});
