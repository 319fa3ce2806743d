// Public feed formats: each importer on excerpts written here (comments, IPv6, malformed
// lines), format detection, --skip-invalid, and the real files in ../shared/data/real.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { describe, test } from 'node:test';
import { FeedImportError, importFeed } from '../src/feeds/import.js';
import { listToken } from '../src/feeds/formats.js';
import { loadSources } from '../src/feeds/sources.js';
import { importSources, refreshSources } from '../src/feeds/refresh.js';
import { readSourceStates } from '../src/feeds/source-state.js';
import { readFeed } from '../src/feeds/feed-store.js';
import { SHARED_REAL, answerOf, buildIndex, tempDir, writeFile } from './helpers.js';

function imported(text: string, options: Record<string, unknown> = {}, name = 'f.txt') {
  const dataDir = tempDir();
  const r = importFeed({ dataDir, file: writeFile(dataDir, name, text), ...options });
  const rows = [...readFeed(r.file)];
  return { r, rows };
}

describe('feed importers', () => {
  test('a file with more entries than a source may hold is refused, before parsing where a line is an entry', () => {
    const max = { limit: 10, setting: 'SOURCES_MAX_ENTRIES' };
    const list = Array.from({ length: 11 }, (_, i) => `10.${i}.0.1`).join('\n') + '\n';
    assert.throws(
      () => imported(list, { category: 'vpn', maxEntries: max }),
      (e: unknown) => {
        assert.ok(e instanceof FeedImportError);
        assert.match(
          e.message,
          /more than 10 entries \(11 lines\), the most one source may hold \(SOURCES_MAX_ENTRIES\): refused before it is imported; raise SOURCES_MAX_ENTRIES/,
        );
        return true;
      },
    );
    // Blank lines are no entries; ten are taken.
    assert.equal(imported(list.split('\n').slice(1).join('\n\n'), { category: 'vpn', maxEntries: max }).r.rows, 10);
    const csv = 'network,category\n' + Array.from({ length: 11 }, (_, i) => `10.${i}.0.0/24,vpn`).join('\n');
    assert.throws(() => imported(csv, { maxEntries: max }, 'f.csv'), /more than 10 entries \(11 lines\)/);
    // A JSON format: counted as its entries are made, and never skipped as a bad line.
    const aws = JSON.stringify(
      {
        syncToken: '1',
        createDate: 'x',
        prefixes: Array.from({ length: 11 }, (_, i) => ({ ip_prefix: `3.${i}.0.0/16`, region: 'x', service: 'EC2' })),
        ipv6_prefixes: [],
      },
      null,
      1,
    );
    assert.throws(() => imported(aws, { maxEntries: max, skipInvalid: true }, 'aws.json'), /more than 10 entries \(11 or more\)/);
    assert.equal(imported(aws, {}, 'aws.json').r.rows, 11, 'no limit unless one is given (ipsift feed import)');
  });

  test('a source over SOURCES_MAX_ENTRIES is refused with a reason, and its last good copy keeps answering', async () => {
    const dataDir = tempDir();
    const list = writeFile(dataDir, 'big.txt', '10.0.0.1\n10.0.0.2\n');
    const sources = loadSources(writeFile(dataDir, 'sources.json', JSON.stringify([{ name: 'big', path: list, format: 'list', category: 'vpn' }])));
    const good = await refreshSources(dataDir, sources, { maxEntries: 3, all: true });
    assert.deepEqual(
      good.reports.map((r) => [r.ok, r.rows]),
      [[true, 2]],
    );
    fs.writeFileSync(list, Array.from({ length: 50 }, (_, i) => `10.1.0.${i}`).join('\n'));
    const over = await refreshSources(dataDir, sources, { maxEntries: 3, all: true });
    assert.deepEqual(
      over.reports.map((r) => [r.ok, r.rows, r.fetch]),
      [[true, 2, 'refused']],
    );
    assert.match(readSourceStates(dataDir).big.reason ?? '', /more than 3 entries \(50 lines\).*SOURCES_MAX_ENTRIES/);
  });

  test('list lines: comments, labels, ports, schemes, brackets, tabs', () => {
    const cases: [string, string][] = [
      ['81.7.3.1', '81.7.3.1'],
      ['  81.7.3.0/24  # ExampleVPN, Frankfurt', '81.7.3.0/24'],
      ['91.230.225.200 # expressvpn', '91.230.225.200'],
      ['; a comment', ''],
      ['# a comment', ''],
      ['85.8.47.198:7080', '85.8.47.198'],
      ['socks5://144.31.222.106:7890', '144.31.222.106'],
      ['http://85.8.47.209:7080/', '85.8.47.209'],
      ['[2a01:4f8::1]:443', '2a01:4f8::1'],
      ['2a01:4f8::/32\t', '2a01:4f8::/32'],
      ['1.2.3.4-1.2.3.9', '1.2.3.4-1.2.3.9'],
      ['2001:db8::1', '2001:db8::1'],
    ];
    for (const [line, want] of cases) assert.equal(listToken(line), want, line);
  });

  test('list import: category and provider from options; a bad line names file and line', () => {
    const { r, rows } = imported('# Mullvad\n185.65.134.0/24 # se-got\n2a03:1b20:1::/48\n', { category: 'vpn', details: { provider: 'Mullvad' } });
    assert.equal(r.rows, 2);
    assert.equal(rows[0].detail, '{"provider":"Mullvad"}');
    assert.equal(rows[1].family, 6);
    assert.throws(
      () => imported('1.2.3.4\nnot-an-ip\n', { category: 'vpn' }),
      (e: FeedImportError) => e.line === 2 && /f\.txt:2:/.test(e.message),
    );
    const skipped = imported('1.2.3.4\nnot-an-ip\n5.6.7.8\n', { category: 'vpn', skipInvalid: true });
    assert.deepEqual([skipped.r.rows, skipped.r.skipped], [2, 1]);
    assert.match(skipped.r.skippedExamples[0], /:2:/);
  });

  test('TorDNSEL exit-addresses: tor, Tor Project, last_seen from ExitAddress', () => {
    const text = `ExitNode FE39F07EBE7870DCE124AB30DF3ABD0700A43F75
Published 2024-03-11 13:07:19
LastStatus 2024-03-12 08:00:00
ExitAddress 185.241.208.232 2024-03-12 08:10:51
ExitNode 23B49521BDC4588C7CCF3C38E552504118326B66
Published 2024-03-12 02:29:55
ExitAddress 2a0b:f4c2::1 2024-03-10 13:03:14
ExitNode 64D74AAA74F30DC2CFB36343CE5D4451B9A4DBA8
ExitAddress 185.241.208.232 2024-03-13 01:00:00
ExitNode 74D74AAA74F30DC2CFB36343CE5D4451B9A4DBA8
ExitAddress 185.241.208.232 2024-03-01 01:00:00
`;
    const { r, rows } = imported(text, { format: 'auto' }, 'exit-addresses');
    assert.equal(r.format, 'tor-exit-addresses');
    // Relays sharing an address are one network, dated by the newest of their lines.
    assert.deepEqual(r.byCategory, { tor: 2 });
    assert.equal(rows[0].detail, '{"provider":"Tor Project","last_seen":"2024-03-13"}');
  });

  test('TorDNSEL exit-addresses from the Tor Project: one network per address', {
    skip: !fs.existsSync(SHARED_REAL) && `${SHARED_REAL} is not present`,
  }, () => {
    const file = path.join(SHARED_REAL, 'tor/javascripterzzeerrr__ipinfo-parser/exit-addresses');
    const text = fs.readFileSync(file, 'utf8');
    const addresses = new Set([...text.matchAll(/^ExitAddress (\S+)/gm)].map((m) => m[1]));
    assert.ok([...text.matchAll(/^ExitAddress /gm)].length > addresses.size, 'the file repeats addresses');
    const { r } = imported(text, { format: 'auto' }, 'exit-addresses');
    assert.equal(r.rows, addresses.size);
  });

  test('MISP warning lists: category from the name, or --category', () => {
    const relay = imported(
      JSON.stringify({ name: 'iCloud Private Relay', description: 'egress', list: ['172.224.224.0/27', '2a02:26f7:b3c0:4000::/64'] }),
      { format: 'auto' },
      'list.json',
    );
    assert.deepEqual([relay.r.format, relay.r.byCategory], ['misp', { relay: 2 }]);
    const cdn = imported(JSON.stringify({ description: 'Fastly IP address ranges', list: ['151.101.0.0/16'] }), { format: 'misp' }, 'l.json');
    assert.deepEqual(cdn.r.byCategory, { cdn: 1 });
    assert.throws(() => imported(JSON.stringify({ name: 'Something', list: ['1.2.3.0/24'] }), { format: 'misp' }, 'x.json'), /give --category/);
    assert.deepEqual(imported(JSON.stringify({ name: 'Something', list: ['1.2.3.0/24'] }), { format: 'misp', category: 'hosting' }, 'x.json').r.byCategory, {
      hosting: 1,
    });
  });

  test('cloud JSON ({provider, ipv4, ipv6}) and AWS ip-ranges.json', () => {
    const c = imported(JSON.stringify({ provider: 'Hetzner', ipv4: ['116.202.0.0/16'], ipv6: ['2a01:4f8::/32'] }), { format: 'auto' }, 'hetzner.json');
    assert.deepEqual([c.r.format, c.r.byCategory, c.rows[0].detail], ['cloud-json', { hosting: 2 }, '{"provider":"Hetzner"}']);
    const awsDoc = {
      syncToken: '1',
      createDate: '2025-07-04-00-00-00',
      prefixes: [
        { ip_prefix: '3.5.140.0/22', region: 'ap-northeast-2', service: 'AMAZON' },
        { ip_prefix: '13.32.0.0/15', region: 'GLOBAL', service: 'CLOUDFRONT' },
      ],
      ipv6_prefixes: [{ ipv6_prefix: '2600:9000::/28', region: 'GLOBAL', service: 'CLOUDFRONT' }],
    };
    const a = imported(JSON.stringify(awsDoc, null, 1), { format: 'auto' }, 'ip-ranges.json');
    assert.deepEqual([a.r.format, a.r.byCategory], ['aws', { hosting: 1, cdn: 2 }]);
    assert.ok(a.rows.some((x) => x.detail === '{"provider":"Amazon CloudFront"}'));
  });

  test('Google prefixes, geofeeds, ipcat, Mullvad CSV, Tor CSV, proxy CSVs and proxies.json', () => {
    const g = imported(
      JSON.stringify({ syncToken: '1', prefixes: [{ ipv4Prefix: '34.1.208.0/20', service: 'Google Cloud' }, { ipv6Prefix: '2600:1900::/28' }] }),
      { format: 'auto' },
      'cloud.json',
    );
    assert.deepEqual(
      [g.r.format, g.r.byCategory, g.rows[0].detail, g.rows[1].detail],
      ['google', { hosting: 2 }, '{"provider":"Google Cloud"}', '{"provider":"Google"}'],
    );
    const geo = imported(
      '5.101.96.0/21,NL,NL-NH,Amsterdam,1098 XH\n2a03:b0c0::/32,US,US-NY,New York,\n',
      { format: 'auto', details: { provider: 'DigitalOcean' } },
      'do.csv',
    );
    assert.deepEqual([geo.r.format, geo.r.byCategory], ['geofeed', { hosting: 2 }]);
    const apple = imported(
      '172.224.224.0/27,GB,GB-EN,London\n',
      { format: 'auto', category: 'relay', details: { provider: 'Apple iCloud Private Relay' } },
      'egress.csv',
    );
    assert.deepEqual(apple.r.byCategory, { relay: 1 });
    const ipcatRows = imported('3.0.0.0,3.1.255.255,Amazon AWS,http://www.amazon.com/aws/\n', { format: 'auto' }, 'datacenters.csv');
    assert.deepEqual([ipcatRows.r.format, ipcatRows.rows[0].detail], ['ipcat', '{"provider":"Amazon Web Services"}']); // the registry's display name
    const m = imported(
      'ip,hostname,first_seen,last_seen\n31.171.153.66,al-tia-wg-001.relays.mullvad.net,2024-11-24 11:01:35,2025-05-27 21:21:42\n',
      { format: 'auto' },
      'm.csv',
    );
    assert.equal(m.r.format, 'mullvad-csv');
    assert.deepEqual(JSON.parse(m.rows[0].detail), { provider: 'Mullvad', last_seen: '2025-05-27', method: 'server_list' });
    const t = imported('fingerprint,ipaddr,port\n000F3EB75342BE371F1D8D3FAE90890AEB5664EE,204.137.14.106,443\n', { format: 'auto' }, 'exits.csv');
    assert.deepEqual([t.r.format, t.r.byCategory], ['tor-csv', { tor: 1 }]);
    const p = imported('#\n# generated\nproxy exit ip,optional comment\n1.0.171.213,\n1.1.189.58,\n', { format: 'auto', category: 'resproxy' }, 'p.csv');
    assert.deepEqual([p.r.format, p.r.byCategory], ['proxy-csv', { resproxy: 2 }]);
    const pj = imported(
      JSON.stringify([
        { host: '144.31.222.106', port: 7890, exit_ip: '104.28.230.247' },
        { host: '1.2.3.4', port: 80, exit_ip: '1.2.3.4' },
      ]),
      { format: 'auto' },
      'proxies.json',
    );
    assert.deepEqual([pj.r.format, pj.r.rows, pj.r.byCategory], ['proxies-json', 3, { dcproxy: 3 }]);
  });

  test('Azure, Oracle, GitHub meta, Fastly, Zscaler and ProtonVPN logicals', () => {
    const az = imported(
      JSON.stringify({ values: [{ name: 'AzureCloud', properties: { addressPrefixes: ['4.145.74.52/30', '2603:1000::/40'] } }] }),
      { format: 'auto' },
      'tags.json',
    );
    assert.deepEqual([az.r.format, az.r.byCategory, az.rows[0].detail], ['azure', { hosting: 2 }, '{"provider":"Microsoft Azure"}']);
    const oci = imported(
      JSON.stringify({ regions: [{ region: 'us-ashburn-1', cidrs: [{ cidr: '129.80.0.0/16', tags: ['OCI'] }] }] }),
      { format: 'auto' },
      'oci.json',
    );
    assert.deepEqual([oci.r.format, oci.r.rows], ['oracle', 1]);
    const gh = imported(
      JSON.stringify({
        verifiable_password_authentication: false,
        ssh_keys: ['ssh-ed25519 AAAA'],
        hooks: ['192.30.252.0/22'],
        web: ['192.30.252.0/22', '2a0a:a440::/29'],
      }),
      { format: 'auto' },
      'meta.json',
    );
    assert.deepEqual([gh.r.format, gh.r.rows], ['github', 2]);
    const fa = imported(JSON.stringify({ addresses: ['151.101.0.0/16'], ipv6_addresses: ['2a04:4e40::/32'] }), { format: 'auto' }, 'fastly.json');
    assert.deepEqual([fa.r.format, fa.r.byCategory], ['fastly', { cdn: 2 }]);
    const zs = imported(JSON.stringify({ cloudName: 'zscaler.net', hubPrefixes: ['8.25.203.0/24'] }), { format: 'auto' }, 'z.json');
    assert.deepEqual([zs.r.format, zs.rows[0].detail], ['zscaler', '{"provider":"Zscaler"}']);
    const pv = imported(
      JSON.stringify({ LogicalServers: [{ Name: 'JP#1', Servers: [{ EntryIP: '103.125.235.18', ExitIP: '103.125.235.21' }, { ExitIP: '103.125.235.21' }] }] }),
      { format: 'auto' },
      'logicals.json',
    );
    assert.deepEqual([pv.r.format, pv.r.rows, JSON.parse(pv.rows[0].detail)], ['protonvpn-logicals', 1, { provider: 'ProtonVPN', method: 'server_list' }]);
  });

  test('a sources file imports each source as its own feed; a bad one is reported, not fatal', async () => {
    const dir = tempDir();
    writeFile(dir, 'exits.txt', '185.241.208.232\n194.26.192.64 # label\n');
    writeFile(dir, 'hetzner.json', JSON.stringify({ provider: 'Hetzner', ipv4: ['116.202.0.0/16'] }));
    writeFile(dir, 'broken.txt', '1.2.3.4\nnonsense\n');
    const file = writeFile(
      dir,
      'sources.json',
      JSON.stringify([
        { name: 'tor-exits', path: 'exits.txt', format: 'list', category: 'tor', provider: 'Tor Project' },
        { name: 'hetzner', path: 'hetzner.json' },
        { name: 'broken', path: 'broken.txt', format: 'list', category: 'vpn' },
        { name: 'lenient', path: 'broken.txt', format: 'list', category: 'vpn', skip_invalid: true },
      ]),
    );
    const dataDir = tempDir();
    const reports = await importSources(dataDir, loadSources(file));
    assert.deepEqual(
      reports.map((r) => [r.name, r.ok, r.rows, r.skipped]),
      [
        ['tor-exits', true, 2, 0],
        ['hetzner', true, 1, 0],
        ['broken', false, 0, 0],
        ['lenient', true, 1, 1],
      ],
    );
    assert.match(reports[2].error!, /broken\.txt:2:/);
    assert.throws(() => loadSources(writeFile(dir, 'bad.json', JSON.stringify([{ name: 'x', path: 'a', url: 'http://b' }]))), /exactly one of path and url/);
  });

  test('priorities and "not": an owner\'s list outranks aggregators; relay egress clears a merged VPN list', async () => {
    const dir = tempDir();
    writeFile(dir, 'aggregate-dc.txt', '3.0.0.0/8 # Amazon\n3.5.140.0/24\n2600:1f00::/24\n');
    writeFile(
      dir,
      'aws.json',
      JSON.stringify({
        syncToken: '1',
        prefixes: [{ ip_prefix: '3.5.0.0/16', service: 'EC2' }],
        ipv6_prefixes: [{ ipv6_prefix: '2600:1f00::/40', service: 'EC2' }],
      }),
    );
    writeFile(dir, 'merged-vpn.txt', '17.0.0.0/8\n172.224.0.0/12\n2a02:26f7::/32\n');
    writeFile(dir, 'egress.csv', '172.224.226.0/27,GB,GB-EN,London,\n2a02:26f7:b3c0:4000::/64,GB,GB-EN,London,\n');
    const file = writeFile(
      dir,
      'sources.json',
      JSON.stringify([
        // Aggregators that claim whole /8s: taken only when the sources file says so.
        { name: 'dc', path: 'aggregate-dc.txt', format: 'list', category: 'hosting', allow_large_blocks: true },
        { name: 'aws', path: 'aws.json', priority: 1 },
        { name: 'vpn', path: 'merged-vpn.txt', format: 'list', category: 'vpn', allow_large_blocks: true },
        { name: 'relay', path: 'egress.csv', format: 'geofeed', category: 'relay', provider: 'Apple iCloud Private Relay', priority: 1, not: ['vpn'] },
      ]),
    );
    const dataDir = tempDir();
    const reports = await importSources(dataDir, loadSources(file));
    assert.ok(
      reports.every((r) => r.ok),
      JSON.stringify(reports),
    );
    assert.deepEqual(
      reports.map((r) => r.rows),
      [3, 2, 3, 2],
      'rows count what the file lists, not the exclusions',
    );
    const index = await buildIndex(dataDir);
    const provider = (a: Record<string, unknown>, cat: string) => (a[cat] as { provider?: string }).provider;
    // The owner's /16 wins over the aggregator's more specific /24; outside it the aggregator answers.
    assert.equal(provider(answerOf(index, '3.5.140.7'), 'hosting'), 'Amazon Web Services');
    assert.equal(provider(answerOf(index, '2600:1f00::1'), 'hosting'), 'Amazon Web Services');
    assert.equal(answerOf(index, '3.6.0.1').is_hosting, true);
    assert.equal(provider(answerOf(index, '3.6.0.1'), 'hosting'), undefined);
    // Relay egress is relay and not vpn; the rest of the merged VPN list stays vpn.
    for (const ip of ['172.224.226.1', '2a02:26f7:b3c0:4000::9']) {
      const a = answerOf(index, ip);
      assert.deepEqual([a.is_relay, a.is_vpn, provider(a, 'relay')], [true, false, 'Apple iCloud Private Relay'], ip);
    }
    assert.equal(answerOf(index, '172.224.227.1').is_vpn, true);
    assert.equal(answerOf(index, '2a02:26f7:b3c0:5000::1').is_vpn, true);
  });

  test('priority and "not" are checked: integers in range, known categories, never the file\'s own', () => {
    const list = '81.2.3.0/24\n';
    assert.throws(() => imported(list, { category: 'relay', priority: 1.5 }), /priority must be an integer from -100 to 100/);
    assert.throws(() => imported(list, { category: 'relay', priority: 101 }), /priority must be an integer/);
    assert.throws(() => imported(list, { category: 'relay', not: ['vpm'] }), /unknown category "vpm" in not/);
    assert.throws(() => imported(list, { category: 'vpn', not: ['vpn'] }), /lists vpn networks and also says its networks are not vpn/);
    const { r, rows } = imported(list, { category: 'relay', priority: -3, not: ['vpn', 'tor'] });
    assert.equal(r.priority, -3);
    assert.deepEqual(
      rows.map((e) => [e.category, e.detail]),
      [
        ['relay', '{}'],
        ['vpn', '-'],
        ['tor', '-'],
      ],
    );
    const dir = tempDir();
    assert.throws(() => loadSources(writeFile(dir, 's.json', JSON.stringify([{ name: 'x', path: 'a', priority: 'high' }]))), /priority must be an integer/);
    assert.throws(() => loadSources(writeFile(dir, 't.json', JSON.stringify([{ name: 'x', path: 'a', not: 'vpn' }]))), /not must be an array/);
  });

  test('a URL source is fetched; when a later fetch fails the last good copy is used', async () => {
    let up = true;
    const server = http.createServer((_, res) => {
      if (!up) return void res.writeHead(503).end();
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('81.7.3.0/24\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const dir = tempDir();
      const file = writeFile(
        dir,
        'sources.json',
        JSON.stringify([{ name: 'remote', url: `http://127.0.0.1:${port}/list.txt`, format: 'list', category: 'vpn' }]),
      );
      const dataDir = tempDir();
      const first = await importSources(dataDir, loadSources(file));
      assert.deepEqual([first[0].ok, first[0].fetch, first[0].rows], [true, 'fetched', 1]);
      up = false;
      const second = await importSources(dataDir, loadSources(file));
      assert.deepEqual([second[0].ok, second[0].fetch, second[0].rows], [true, 'stale', 1]);
      assert.match(second[0].error!, /last good copy/);
    } finally {
      server.close();
    }
  });

  test('cidr,hostmin,hostmax,vendor CSV, arrays of {ip} objects and spys.me lists', () => {
    const cv = imported('"cidr","hostmin","hostmax","vendor"\n"1.178.1.0/24","1.178.1.0","1.178.1.255","AWS"\n', { format: 'auto' }, 'dc.csv');
    assert.deepEqual([cv.r.format, cv.rows[0].detail], ['cidr-vendor', '{"provider":"Amazon Web Services"}']); // the registry's display name
    const io = imported(JSON.stringify([{ ip: '1.161.163.82', country: 'TW' }, { ip: '2a0b:f4c2::1' }]), { format: 'auto', category: 'tor' }, 'geo.json');
    assert.deepEqual([io.r.format, io.r.byCategory], ['ip-objects', { tor: 2 }]);
    const sp = imported(
      'Proxy list (#2) updated at Fri\nSupport by donations:\nIP address:Port CountryCode-Anonymity\n\n170.239.207.241:999 CO-N-S! + \n42.2.156.79:80 HK-A + \n\nFree open HTTP/HTTPS proxy list\n',
      { format: 'auto' },
      'p.txt',
    );
    assert.deepEqual([sp.r.format, sp.r.rows, sp.r.skipped], ['spys', 2, 0]);
  });

  test('a Markdown server table (PIA watch): the Server IP column', () => {
    const md =
      '# PIA\n\n| Region Name | Country | Protocol | Server IP | CN |\n|-------------|---------|----------|-----------|----|\n| Venezuela | VE | meta | 95.181.237.51 | venezuela402 |\n| Venezuela | VE | meta | 95.181.237.38 | venezuela406 |\n';
    const t = imported(md, { format: 'auto', category: 'vpn', details: { provider: 'Private Internet Access' } }, 'Readme.md');
    assert.deepEqual([t.r.format, t.r.rows, t.r.byCategory], ['markdown-table', 2, { vpn: 2 }]);
    // The table does not say its servers are VPN servers: the category is the user's to give.
    assert.throws(() => imported(md, { format: 'auto' }, 'Readme.md'), /a markdown-table needs --category/);
  });

  test('auto detection refuses JSON it does not know', () => {
    assert.throws(() => imported('{"foo": [1]}', { format: 'auto', category: 'vpn' }, 'x.json'), /no known layout/);
  });

  const real = (rel: string) => path.join(SHARED_REAL, rel);
  test('real files import with zero rejects', { skip: !fs.existsSync(SHARED_REAL) && `${SHARED_REAL} is not present` }, () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['tor/javascripterzzeerrr__ipinfo-parser/exit-addresses', { format: 'auto' }, 'tor'],
      ['tor/SecOps-Institute__Tor-IP-Addresses/tor-exit-nodes.lst', { category: 'tor', details: { provider: 'Tor Project' } }, 'tor'],
      ['vpn/Joe12387__open-source-vpn-ip-lists/mullvad.txt', { category: 'vpn', details: { provider: 'Mullvad' } }, 'vpn'],
      ['vpn/az0__vpn_ip/data/input/ip/expressvpn.txt', { category: 'vpn', details: { provider: 'ExpressVPN' } }, 'vpn'],
      ['vpn/X4BNet__lists_vpn/output/vpn/ipv6.txt', { category: 'vpn' }, 'vpn'],
      ['relay/MISP__misp-warninglists/lists/icloud-private-relay/list.json', { format: 'auto' }, 'relay'],
      ['cdn/MISP__misp-warninglists/lists/fastly/list.json', { format: 'auto' }, 'cdn'],
      ['datacenter/disposable__cloud-ip-ranges/json/hetzner.json', { format: 'auto' }, 'hosting'],
      ['cloud/femueller__cloud-ip-ranges/aws-ip-ranges.json', { format: 'auto' }, 'hosting'],
      ['cdn/femueller__cloud-ip-ranges/akamai-v4-ip-ranges.txt', { category: 'cdn', details: { provider: 'Akamai' } }, 'cdn'],
      ['proxy/monosans__proxy-list/proxies/all.txt', { category: 'dcproxy' }, 'dcproxy'],
      ['proxy/clarketm__proxy-list/proxy-list-raw.txt', { category: 'dcproxy' }, 'dcproxy'],
      ['proxy/clarketm__proxy-list/proxy-list.txt', { format: 'auto' }, 'dcproxy'],
      ['datacenter/jhassine__server-ip-addresses/data/datacenters.csv', { format: 'auto' }, 'hosting'],
      ['tor/doodad-labs__tor-nodes/active/geo-location.json', { format: 'auto', category: 'tor' }, 'tor'],
      ['vpn/scriptzteam__PrivateInternetAccessWatch/Readme.md', { format: 'auto', category: 'vpn', details: { provider: 'Private Internet Access' } }, 'vpn'],
      ['cloud/berthubert__googerteller/goog.json', { format: 'auto' }, 'hosting'],
      ['cloud/femueller__cloud-ip-ranges/google-cloud-ip-ranges.json', { format: 'auto' }, 'hosting'],
      ['cloud/femueller__cloud-ip-ranges/digitalocean.csv', { format: 'auto', details: { provider: 'DigitalOcean' } }, 'hosting'],
      ['datacenter/client9__ipcat/datacenters.csv', { format: 'auto' }, 'hosting'],
      ['vpn/sudesh0sudesh__MullVadIPs/mullvadips.csv', { format: 'auto' }, 'vpn'],
      ['tor/ling0x__tor-nodes/latest.exits.csv', { format: 'auto' }, 'tor'],
      ['proxy/mannfredcom__semi-static-proxy-ips/proxy_exits_7d_ipv4.csv', { format: 'auto' }, 'dcproxy'],
      ['proxy/mannfredcom__semi-static-proxy-ips/proxy_subnets_30d_ipv6.csv', { format: 'auto' }, 'dcproxy'],
      ['proxy/monosans__proxy-list/proxies.json', { format: 'auto' }, 'dcproxy'],
      ['cloud/femueller__cloud-ip-ranges/microsoft-azure-ip-ranges.json', { format: 'auto' }, 'hosting'],
      ['cloud/femueller__cloud-ip-ranges/oracle-cloud-ip-ranges.json', { format: 'auto' }, 'hosting'],
      ['cloud/femueller__cloud-ip-ranges/github-ip-ranges.json', { format: 'auto' }, 'hosting'],
      ['cloud/femueller__cloud-ip-ranges/zscaler-cloud-ip-ranges.json', { format: 'auto' }, 'hosting'],
      ['cdn/femueller__cloud-ip-ranges/fastly-ip-ranges.json', { format: 'auto' }, 'cdn'],
      ['vpn/tn3w__ProtonVPN-IPs/protonvpn_logicals.json', { format: 'auto' }, 'vpn'],
      ['relay/hroost__icloud-private-relay-iplist/ipv6/ipv6-ranges.txt', { category: 'relay', details: { provider: 'Apple iCloud Private Relay' } }, 'relay'],
    ];
    for (const [rel, options, category] of cases) {
      const dataDir = tempDir();
      const r = importFeed({ dataDir, file: real(rel), name: 'real', ...options });
      assert.equal(r.skipped, 0, rel);
      assert.ok(r.rows > 0 && (r.byCategory as Record<string, number>)[category] > 0, `${rel}: ${JSON.stringify(r.byCategory)}`);
    }
  });
});

describe('imports that guess right', () => {
  const nordCsv = 'IP,First Seen,Last Seen\n185.202.220.17,2026-10-01 08:00:00,2026-11-20 09:30:00\n2a0d:5600:24:a::1,2026-10-02,2026-11-21\n';

  test('a NordVPN CSV (IP, First Seen, Last Seen) imports by content with only --category and --provider', () => {
    const { r, rows } = imported(nordCsv, { category: 'vpn', details: { provider: 'NordVPN' } }, 'nordvpn.csv');
    assert.deepEqual([r.format, r.rows, r.byCategory], ['csv', 2, { vpn: 2 }]);
    // A timestamp's day is the date; vpn details keep no first_seen, and the report says so.
    assert.deepEqual(JSON.parse(rows[0].detail), { provider: 'NordVPN', last_seen: '2026-11-20' });
    assert.deepEqual(r.notes, ['first_seen left out: vpn details have no first_seen']);
    // Without a category the refusal says what to give.
    assert.throws(() => imported(nordCsv, {}, 'nordvpn.csv'), /:2: no category: give a category column or --category/);
  });

  test('a format asked for by name never stamps its category or provider on a file of another kind', () => {
    for (const format of ['tor-csv', 'mullvad-csv', 'tor-exit-addresses', 'aws']) {
      assert.throws(
        () => imported(nordCsv, { format }, 'nordvpn.csv'),
        new RegExp(`not a ${format} file \\(.*\\): the file starts "IP,First Seen,Last Seen"; it reads as csv$`),
        format,
      );
    }
  });

  test('header names match in any case and spelling; the address column may be ip, address, cidr or prefix', () => {
    const { r, rows } = imported('Prefix,Category,Provider,Last-Seen\n81.7.3.0/24,vpn,ExampleVPN,2026-11-01\n', {}, 'any.csv');
    assert.equal(r.format, 'csv');
    assert.deepEqual(JSON.parse(rows[0].detail), { provider: 'ExampleVPN', last_seen: '2026-11-01' });
    assert.throws(
      () => imported('host,category\nx,vpn\n', {}, 'h.csv'),
      /unknown column "host": columns are network \(or ip, address, cidr, prefix\), category, provider/,
    );
  });

  test('a MISP warning list of another cloud, a Tor bulk exit list and a bare IPv6 VPN list import by content', () => {
    const oci = imported(
      JSON.stringify({
        name: 'List of known Oracle Cloud Infrastructure (OCI) IP address ranges',
        description: 'OCI',
        list: ['129.146.0.0/21', '2603:c020::/35'],
      }),
      {},
      'list.json',
    );
    assert.deepEqual([oci.r.format, oci.r.byCategory], ['misp', { hosting: 2 }]);
    const tor = imported('185.220.101.1\n185.220.101.2\n', { category: 'tor' }, 'torbulkexitlist');
    assert.deepEqual([tor.r.format, tor.r.byCategory], ['list', { tor: 2 }]);
    assert.deepEqual(JSON.parse(tor.rows[0].detail), {}, 'no provider the file does not state');
    const v6 = imported('2a07:b944::2:1\n2a07:b944::2:2\n', { category: 'vpn', details: { provider: 'Mullvad' } }, 'ipv6.txt');
    assert.deepEqual([v6.r.format, v6.r.byCategory], ['list', { vpn: 2 }]);
  });

  test('a list without a category names the categories and the file', () => {
    assert.throws(
      () => imported('81.7.3.1\n', {}, 'l.txt'),
      /a list needs --category: the file names no category for some rows; give --category \(vpn, hosting, relay, tor, cdn, resproxy, dcproxy, mobproxy\)/,
    );
    assert.throws(
      () => imported('{"what": [1, 2]}', {}, 'x.json'),
      /JSON in no known layout: give --format; the file starts "\{\\"what\\": \[1, 2\]\}"; no format reads it by itself/,
    );
  });
});
