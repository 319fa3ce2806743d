// A batch's outcome written into a reused output slot is the same bytes as in a fresh
// buffer; when it does not fit, a fresh buffer carries it.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { importFeed } from '../src/feeds/import.js';
import { answerBatch } from '../src/lookup/batch.js';
import { TIER_MAX } from '../src/model/projection.js';
import { buildIndex, tempDir, writeFile } from './helpers.js';

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
    assert.ok(small.every((b) => b === 0), 'the small slot was not written');
  });
});
