// The provider registry (src/model/providers.ts): one display name per provider, applied at
// import; names it does not know are kept as written and reported by the import and the build.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runBuild } from '../src/build/build.js';
import { importFeed } from '../src/feeds/import.js';
import { PROVIDERS, providerNamed } from '../src/model/providers.js';
import { TODAY, answerOf, buildIndex, tempDir, writeFile } from './helpers.js';

describe('provider registry', () => {
  test('every spelling of a company answers its one display name', () => {
    const cases: [string, string][] = [
      ['AWS', 'Amazon Web Services'],
      ['Aws', 'Amazon Web Services'],
      ['amazon-aws', 'Amazon Web Services'],
      ['GCP', 'Google Cloud'],
      ['google-gcp', 'Google Cloud'],
      ['Google Cloud', 'Google Cloud'],
      ['Digitalocean', 'DigitalOcean'],
      ['ovh-cluster', 'OVH'],
      ['bunny-net', 'bunny.net'],
      ['Softlayer Ibm', 'IBM Cloud'],
      ['PIA', 'Private Internet Access'],
      ['protonvpn', 'ProtonVPN'],
      ['icloud-private-relay', 'Apple iCloud Private Relay'],
    ];
    for (const [text, name] of cases) assert.equal(providerNamed(text)?.name, name, text);
    // Unknown names are not guessed.
    assert.equal(providerNamed('Vercel Aws'), undefined);
    // Google and Google Cloud are one owner's.
    assert.equal(providerNamed('goog')!.owner, providerNamed('gcp')!.owner);
  });

  test('no alias names two providers, and display names are unique', () => {
    const names = PROVIDERS.map((p) => p.name);
    assert.equal(new Set(names).size, names.length);
  });

  test('an import writes display names; unknown names are kept and reported by the import and the build', async () => {
    const d = tempDir();
    const file = writeFile(
      tempDir(),
      'mixed.csv',
      'network,category,provider\n45.10.0.0/24,hosting,AWS\n45.10.1.0/24,hosting,Aws\n45.10.2.0/24,hosting,Vercel Aws\n45.10.3.0/24,cdn,bunny-net\n',
    );
    const r = importFeed({ dataDir: d, file });
    assert.deepEqual(r.notes, ['1 provider name not in the registry, kept as written: "Vercel Aws"']);
    const index = await buildIndex(d);
    assert.deepEqual(answerOf(index, '45.10.0.1').hosting, { provider: 'Amazon Web Services', confidence: 'medium', last_seen: TODAY });
    assert.deepEqual(answerOf(index, '45.10.1.1').hosting, { provider: 'Amazon Web Services', confidence: 'medium', last_seen: TODAY });
    assert.deepEqual(answerOf(index, '45.10.2.1').hosting, { provider: 'Vercel Aws', confidence: 'medium', last_seen: TODAY });
    assert.deepEqual(answerOf(index, '45.10.3.1').cdn, { provider: 'bunny.net', confidence: 'medium', last_seen: TODAY });
    assert.deepEqual(runBuild({ dataDir: d, exports: false }).manifest.unknown_providers, ['Vercel Aws']);
  });
});
