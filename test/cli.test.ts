import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import { NOT_IN_CATEGORY, readFeed } from '../src/feeds/feed-store.js';
import { jsonLogger } from '../src/log.js';
import { untilListening, type Listening } from '../scripts/listening.js';
import { PROJECT_ROOT, get, tempDir, until, writeFile } from './helpers.js';
import { HELP, helpFor } from '../src/cli/help.js';
import { freePort } from '../src/startup.js';
import { cliInThread, type CliRun } from './cli-in-thread.js';
import { COMMAND_LIST } from '../src/cli/command-list.js';

const run = promisify(execFile);
const CLI = path.join(PROJECT_ROOT, 'dist/src/cli.js');

/** `ipsift args…` in a worker thread (serve and what needs a process of its own are spawned below). */
function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return cliInThread(args, { ...process.env, ...env });
}

/** Starts `ipsift serve` and resolves with its ports once it logs that it listens. */
async function serve(env: Record<string, string>): Promise<Listening & { stop(): void }> {
  const child = spawn(process.execPath, [CLI, 'serve'], { env: { ...process.env, PORT: '0', ADMIN_PORT: '0', ...env } });
  return { ...(await untilListening(child)), stop: () => child.kill('SIGTERM') };
}

describe('ipsift command line', () => {
  test('serve on an empty data directory imports the demo feeds, builds, and becomes ready', async () => {
    const dataDir = tempDir();
    const s = await serve({ DATA_DIR: dataDir, KEYLESS_TIER: 'max', ACCESS_LOG: 'on' });
    try {
      const ready = await get(s.adminPort, '/readyz');
      assert.equal(ready.status, 200);
      assert.match(ready.json.build, /^\d{8}-1$/);
      const tor = await get(s.port, '/81.7.3.20'); // from demo/tor-exits.txt
      assert.equal(tor.json.is_tor, true);
      assert.equal(tor.json.tor.provider, 'Tor Project');
      const v6 = await get(s.port, '/2a01:4f8:c012:3e7b::5');
      assert.equal(v6.json.is_tor, true);
      const metrics = await get(s.adminPort, '/metrics');
      assert.match(metrics.text, /ipsift_index_generation 1/);
      assert.match(s.log(), /"msg":"demo build serving"/);
      // One demo organisation per plan, one key each, kept in a 0600 file and never logged.
      const file = path.join(dataDir, 'demo-keys.json');
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      const keys = JSON.parse(fs.readFileSync(file, 'utf8')) as { plan: string; org_id: string; key_id: string; key: string }[];
      assert.deepEqual(
        keys.map((k) => k.plan),
        ['free', 'starter', 'scale', 'max'],
      );
      for (const k of keys) assert.deepEqual(Object.keys(k), ['plan', 'org_id', 'key_id', 'key']);
      const max = keys.find((k) => k.plan === 'max')!;
      const me = await get(s.port, '/api/v1/account/me', { Authorization: `Bearer ${max.key}` });
      assert.deepEqual([me.json.org_id, me.json.plan], [max.org_id, { key: 'max', tier: 'max' }]);
      const full = await get(s.port, '/81.7.3.20', { Authorization: `Bearer ${max.key}` });
      assert.equal(full.json.tor.provider, 'Tor Project');
      assert.ok('is_mobproxy' in full.json);
      // A key in the query is never logged: the access log has the path only.
      assert.equal((await get(s.port, `/81.7.3.20?apikey=${max.key}`)).status, 200);
      const logged = (): number =>
        s
          .log()
          .split('\n')
          .filter((l) => l.includes('"path":"/81.7.3.20"')).length;
      await until(
        () => logged() >= 3,
        5_000,
        () => `the three lookups of 81.7.3.20 in the access log (${logged()})`,
      );
      for (const k of keys) assert.ok(!s.log().includes(k.key), 'a demo key reached the log');
      // Every line is JSON, on both streams; the keys are in one stdout line, the only output that has them.
      const logLines = s
        .log()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const outLines = s
        .stdout()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.equal(outLines.length, 1);
      assert.deepEqual(
        outLines[0].keys,
        keys.map((k) => ({ plan: k.plan, key: k.key })),
      );
      assert.equal(outLines[0].file, file);
      const accessed = logLines.filter((l) => l.msg === 'request' && l.path === '/81.7.3.20');
      assert.equal(accessed.length, 3, 'keyless, keyed by header, keyed by ?apikey=');
      for (const l of accessed) {
        assert.deepEqual([l.method, l.status, l.remote], ['GET', 200, '127.0.0.1']);
        assert.ok(typeof l.ms === 'number' && typeof l.bytes === 'number' && (l.bytes as number) > 20);
      }
    } finally {
      s.stop();
    }
  });

  test('an unknown HTTP_SERVER is one line naming the choices', async () => {
    const r = await cli(['serve'], { DATA_DIR: tempDir(), HTTP_SERVER: 'apache', PORT: '0', ADMIN_PORT: '0', DEMO: '0' });
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim(), 'ipsift: HTTP_SERVER must be one of auto, uws, bun, node, got "apache"');
  });

  test('LOG_LEVEL and ACCESS_LOG: a wrong value is one line; a level drops the lines below it', async () => {
    const env = { DATA_DIR: tempDir(), PORT: '0', ADMIN_PORT: '0', DEMO: '0' };
    assert.equal((await cli(['serve'], { ...env, LOG_LEVEL: 'debug' })).stderr.trim(), 'ipsift: LOG_LEVEL must be one of info, warn, error, got "debug"');
    assert.equal(
      (await cli(['serve'], { ...env, ACCESS_LOG: '2' })).stderr.trim(),
      'ipsift: ACCESS_LOG must be off, on or a share between 0 and 1 (0.01: one request in a hundred), got "2"',
    );
    for (const [level, expected] of [
      ['info', ['info', 'warn', 'error']],
      ['warn', ['warn', 'error']],
      ['error', ['error']],
    ] as const) {
      const lines: string[] = [];
      const log = jsonLogger((l) => lines.push(l), level);
      log.info('i');
      log.warn('w');
      log.error('e', { n: 1 });
      assert.deepEqual(
        lines.map((l) => (JSON.parse(l) as { level: string }).level),
        expected,
      );
    }
  });

  test('CONFIG_FILE: settings by their environment names, the environment winning; unknown or malformed ones are one line', async () => {
    const dir = tempDir();
    const file = writeFile(dir, 'ipsift.json', JSON.stringify({ DATA_DIR: path.join(dir, 'data'), DEMO: false, KEYLESS_TIER: 'max', PORT: 0, ADMIN_PORT: 0 }));
    const s = await serve({ CONFIG_FILE: file, KEYLESS_TIER: 'scale' });
    try {
      assert.ok(fs.existsSync(path.join(dir, 'data', 'control.sqlite')), 'DATA_DIR from the file');
      assert.doesNotMatch(s.log(), /demo/, 'DEMO=false from the file');
    } finally {
      s.stop();
    }
    const direct = (await import('../src/config.js')).loadConfig({ CONFIG_FILE: file, KEYLESS_TIER: 'scale' });
    assert.deepEqual([direct.dataDir, direct.demo, direct.keylessTier], [path.join(dir, 'data'), false, 2]);
    const env = { PORT: '0', ADMIN_PORT: '0', DEMO: '0' };
    const unknown = await cli(['serve'], { ...env, CONFIG_FILE: writeFile(dir, 'typo.json', '{"PROT": 80}') });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr.trim(), /^ipsift: CONFIG_FILE .*typo\.json: unknown setting "PROT" \(settings are the environment's names: HOST, PORT, /);
    assert.match(
      (await cli(['serve'], { ...env, CONFIG_FILE: writeFile(dir, 'bad.json', '{"PORT": ') })).stderr.trim(),
      /^ipsift: CONFIG_FILE .*bad\.json: not JSON/,
    );
    assert.match((await cli(['serve'], { ...env, CONFIG_FILE: writeFile(dir, 'list.json', '[]') })).stderr.trim(), /must be a JSON object of settings$/);
    assert.match((await cli(['serve'], { ...env, CONFIG_FILE: path.join(dir, 'none.json') })).stderr.trim(), /none\.json: cannot be read$/);
  });

  test('feed import, build and builds report what they did', async () => {
    const dataDir = tempDir();
    const file = writeFile(dataDir, 'exits.txt', '1.2.3.4\n5.6.7.0/24\n');
    const imported = await cli(['feed', 'import', file, '--category', 'tor', '--provider', 'Tor Project', '--json'], { DATA_DIR: dataDir });
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal(JSON.parse(imported.stdout).rows, 2);
    const built = await cli(['build'], { DATA_DIR: dataDir });
    assert.equal(built.code, 0, built.stderr);
    assert.match(built.stdout, /^build \d{8}-1 → /);
    assert.match(built.stdout, /^serving: running servers switch to \d{8}-1/m);
    assert.match(built.stdout, /^published: \d+ database files and the index to the local store/m);
    assert.match(built.stdout, /ranges IPv4: tor 2/);
    assert.match(built.stdout, /timings: read_feeds \d+ ms/);
    const builds = await cli(['builds', '--json'], { DATA_DIR: dataDir });
    assert.equal(JSON.parse(builds.stdout)[0].current, true);
    const relay = writeFile(dataDir, 'egress.txt', '172.224.226.0/27\n');
    const ranked = await cli(['feed', 'import', relay, '--category', 'relay', '--priority', '1', '--not', 'vpn,tor', '--json'], { DATA_DIR: dataDir });
    assert.equal(ranked.code, 0, ranked.stderr);
    const rankedFeed = JSON.parse(ranked.stdout) as { priority: number; rows: number; file: string };
    assert.deepEqual([rankedFeed.priority, rankedFeed.rows], [1, 1]);
    assert.deepEqual(
      [...readFeed(rankedFeed.file)].map((e) => [e.category, e.detail]),
      [
        ['relay', '{}'],
        ['vpn', NOT_IN_CATEGORY],
        ['tor', NOT_IN_CATEGORY],
      ],
      '--not vpn,tor is stored with the feed',
    );
    const listed = await cli(['feed', 'list'], { DATA_DIR: dataDir });
    assert.match(listed.stdout, /egress\t\d+ bytes\tevidence list\tpriority 1/);
    const bad = await cli(['feed', 'import', relay, '--category', 'relay', '--priority', 'high'], { DATA_DIR: dataDir });
    assert.deepEqual([bad.code, bad.stderr.split('\n')[0]], [2, 'ipsift: --priority must be an integer']);
  });

  test("what 'ipsift build' says it published is downloadable; --no-publish and --no-serve say what they left undone", async () => {
    const dataDir = tempDir();
    const env = { DATA_DIR: dataDir };
    const rows = Array.from({ length: 30 }, (_, i) => `81.7.${2 * i}.0/24,vpn,ExampleVPN`).join('\n');
    assert.equal((await cli(['feed', 'import', writeFile(dataDir, 'f.csv', `network,category,provider\n${rows}\n`)], env)).code, 0);
    const org = JSON.parse((await cli(['org', 'create', '--name', 'Acme', '--plan', 'max', '--json'], env)).stdout) as { id: string };
    const key = JSON.parse((await cli(['key', 'create', '--org', org.id, '--name', 'dl', '--scope', 'db.download', '--json'], env)).stdout) as { key: string };
    await cli(['license', 'grant', '--org', org.id, '--base', 'vpn', '--type', 'evaluation', '--starts', '2026-01-01', '--expires', '2099-01-01'], env);
    const built = await cli(['build'], env);
    assert.equal(built.code, 0, built.stderr);
    const said = /^published: (\d+) database files and the index to the local store; downloads serve build (\d{8}-\d+)$/m.exec(built.stdout);
    assert.ok(said, built.stdout);
    // The promise held: a server started now hands out the published file at once.
    const s = await serve({ ...env, DEMO: '0', PUBLISH_AT: '' });
    try {
      const dl = await get(s.port, '/api/v1/database/download?id=vpn_v1&format=csvgz', { Authorization: `Bearer ${key.key}` });
      assert.equal(dl.status, 302, dl.text);
      assert.match(String(dl.headers.location), new RegExp(`${said[2]}/vpn_v1\\.csv\\.gz`));
    } finally {
      s.stop();
    }
    const held = await cli(['build', '--no-publish', '--json'], env);
    const heldJson = JSON.parse(held.stdout) as { serving: boolean; publication: unknown };
    assert.deepEqual([heldJson.serving, heldJson.publication], [true, null]);
    assert.match(
      (await cli(['build', '--no-publish'], env)).stdout,
      /^not published \(--no-publish\): downloads serve the last published build until 'ipsift publish'$/m,
    );
    const only = await cli(['build', '--no-serve'], env);
    assert.match(only.stdout, /^not serving \(--no-serve\): 'ipsift builds use \d{8}-\d+' makes it the serving build$/m);
    // A key made without a scope is told what it can do.
    const lookup = await cli(['key', 'create', '--org', org.id, '--name', 'lookups'], env);
    assert.match(lookup.stdout, /^no scope: this key can only look up; give --scope db\.download/m);
  });

  test('a feed of the same name from another file is not replaced without --replace', async () => {
    const dataDir = tempDir();
    const env = { DATA_DIR: dataDir };
    fs.mkdirSync(path.join(dataDir, 'datacenter'));
    fs.mkdirSync(path.join(dataDir, 'vpn'));
    const hosting = writeFile(path.join(dataDir, 'datacenter'), 'ipv4.txt', '5.6.7.0/24\n');
    const vpn = writeFile(path.join(dataDir, 'vpn'), 'ipv4.txt', '1.2.3.0/24\n');
    assert.equal((await cli(['feed', 'import', hosting, '--category', 'hosting'], env)).code, 0);
    // The same file again is a refresh of its feed.
    assert.equal((await cli(['feed', 'import', hosting, '--category', 'hosting'], env)).code, 0);
    const clash = await cli(['feed', 'import', vpn, '--category', 'vpn'], env);
    assert.equal(clash.code, 1);
    assert.equal(
      clash.stderr.trim(),
      `ipsift: ${vpn}: a feed named ipv4 is already imported (from ${hosting}, ${fs.statSync(path.join(dataDir, 'feeds', 'ipv4.feed')).size} bytes): give --name to import this file beside it, or --replace to replace that feed`,
    );
    assert.deepEqual(
      [...readFeed(path.join(dataDir, 'feeds', 'ipv4.feed'))].map((e) => e.category),
      ['hosting'],
      'the hosting feed stands',
    );
    assert.equal((await cli(['feed', 'import', vpn, '--category', 'vpn', '--name', 'vpn-ipv4'], env)).code, 0);
    assert.equal((await cli(['feed', 'import', vpn, '--category', 'vpn', '--replace'], env)).code, 0);
    assert.deepEqual(
      [...readFeed(path.join(dataDir, 'feeds', 'ipv4.feed'))].map((e) => e.category),
      ['vpn'],
    );
  });

  test('a bad feed fails with file, line and reason, exit code 1', async () => {
    const dataDir = tempDir();
    const file = writeFile(dataDir, 'bad.csv', 'network,category\n1.2.3.4,vpn\n1.2.3.999,vpn\n');
    const r = await cli(['feed', 'import', file], { DATA_DIR: dataDir });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), `ipsift: ${file}:3: not an address, CIDR or range: "1.2.3.999"`);
  });

  test('every command and sub-command has --help; unknown ones are usage errors', async () => {
    // Every help text is reached from its own command line, wherever --help stands on it
    // (in process: the lookup is helpFor's alone); one process shows the exit code and stdout.
    for (const key of Object.keys(HELP)) {
      const words = key === '' ? [] : key.split(' ');
      for (const line of [
        [...words, '--help'],
        [...words, '-h'],
        [...words, 'x', '--json', '--help'],
      ]) {
        if (line[line.length - 1] === '--help' && line.includes('x') && words.length === 0) continue;
        assert.equal(helpFor(line), HELP[key], line.join(' '));
      }
      assert.match(HELP[key], /Usage:\s+ipsift|^ipsift — /, key);
    }
    for (const line of [
      ['admin', 'token', '--help'],
      ['admin', 'token', 'create', '--help'],
      ['key', 'revoke', '--help'],
      ['sources', 'status', '-h'],
      ['feed', 'import', 'x.csv', '--help'],
    ]) {
      assert.ok(helpFor(line), line.join(' '));
    }
    assert.equal(helpFor(['frobnicate', '--help']), null, 'an unknown command stays an error');
    assert.equal(helpFor(['feed', 'import', '--', '--help']), null, 'after -- it is an argument');
    const r = await cli(['admin', 'token', '--help']);
    assert.deepEqual([r.code, r.stdout], [0, HELP.admin + '\n']);
    // One table: every command in it has its help, a line in the overview, and its place in
    // the completion script with its subcommands; and runs from it (an unknown sub-command of
    // each is the command's own usage error, not "unknown command").
    const completion = (await cli(['completion'])).stdout;
    for (const c of COMMAND_LIST) {
      assert.ok(HELP[c.name], `${c.name} has its help`);
      for (const [usage] of c.lines) assert.ok(HELP[''].includes(`  ${usage}  `) || HELP[''].includes(`  ${usage} `), usage);
      assert.match(completion, new RegExp(`words="[^"]*\\b${c.name}\\b`), c.name);
      if ('subs' in c) assert.ok(completion.includes(`${c.name}) words="${c.subs.join(' ')}"`), c.name);
    }
    assert.equal((await cli(['frobnicate'])).code, 2);
    assert.equal((await cli(['build'], { DATA_DIR: tempDir() })).code, 1);
  });

  test('no command but serve makes a data directory; each says where it looked and how to point it elsewhere', async () => {
    const cwd = tempDir();
    const inEmpty = async (args: string[], env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> => {
      const e: NodeJS.ProcessEnv = { ...process.env, ...env };
      delete e.DATA_DIR;
      const r = await run(process.execPath, [CLI, ...args], { cwd, env: e, timeout: 30_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
      );
      return r;
    };
    for (const args of [
      ['admin', 'token', 'create', '--name', 'me', '--scope', 'admin.write'],
      ['org', 'list'],
      ['feed', 'list'],
      ['sources', 'status'],
      ['builds'],
      ['explain', '1.2.3.4'],
    ]) {
      const r = await inEmpty(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(
        r.stderr,
        `ipsift: no data directory at ${path.join(fs.realpathSync(cwd), 'data')} (the default DATA_DIR, ./data): 'ipsift serve' makes one on its first start; to use another, set DATA_DIR (DATA_DIR=/path/to/data ipsift ${args
          .slice(0, 2)
          .filter((a) => !a.startsWith('-'))
          .join(' ')} …)\n`,
      );
      assert.deepEqual(fs.readdirSync(cwd), [], `${args.join(' ')} left nothing behind`);
    }
    assert.equal((await inEmpty(['sources', 'list'])).code, 0, 'the shipped registry needs no data directory');
  });

  test('serve takes the options its help names, over the environment, and refuses any other', async () => {
    const dataDir = tempDir();
    const [port, adminPort] = [await freePort('127.0.0.1'), await freePort('127.0.0.1')];
    const child = spawn(process.execPath, [CLI, 'serve', '--port', String(port), '--admin-port', String(adminPort), '--data-dir', dataDir], {
      env: { ...process.env, PORT: '1', ADMIN_PORT: '2', DEMO: '0' },
    });
    try {
      const s = await untilListening(child);
      assert.deepEqual([s.port, s.adminPort], [port, adminPort]);
      assert.equal((await get(adminPort, '/healthz')).status, 200);
    } finally {
      child.kill('SIGTERM');
    }
    for (const args of [
      ['serve', '--prot', '9999'],
      ['serve', 'now'],
      ['serve', '--port', 'x'],
    ]) {
      const r = await cli(args, { DATA_DIR: dataDir });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    }
  });

  test('sources status reads the state it finds when SOURCES is not set', async () => {
    const dataDir = tempDir();
    fs.mkdirSync(path.join(dataDir, 'sources'));
    // A failed last attempt: its state is 'failed' whatever the clock says.
    const at = '2026-11-01T00:00:00.000Z';
    const state = {
      'tor-exits-doodad': {
        url: null,
        reason: 'cannot fetch: ECONNRESET',
        etag: null,
        last_modified: null,
        attempt: 'failed',
        attempted_at: at,
        good_at: at,
        changed_at: at,
        entries: 1200,
        bytes: 20000,
        sha256: 'ab',
      },
    };
    fs.writeFileSync(path.join(dataDir, 'sources', 'state.json'), JSON.stringify(state));
    const r = await cli(['sources', 'status', '--json'], { DATA_DIR: dataDir, SOURCES: '' });
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as {
      name: string;
      state: string;
      entries: number;
      url: string | null;
      fetched_at: string | null;
      reason: string | null;
    }[];
    assert.deepEqual(
      rows.map((x) => [x.name, x.state, x.entries, x.fetched_at, x.reason]),
      [['tor-exits-doodad', 'failed', 1200, at, 'cannot fetch: ECONNRESET']],
    );
    assert.match(String(rows[0].url), /^https:\/\//, 'the registry entry of that name, with its URL');
    const text = await cli(['sources', 'status'], { DATA_DIR: dataDir, SOURCES: '' });
    assert.match(text.stdout, /^\(SOURCES is not set: the 1 sources in .*state\.json\)/);
    const none = await cli(['sources', 'status'], { DATA_DIR: tempDir(), SOURCES: '' });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no sources configured and none fetched into .*state\.json/);
  });

  test('a negative --priority is a value, as the README writes it', async () => {
    const dataDir = tempDir();
    const file = writeFile(dataDir, 'wide.txt', '81.0.0.0/12\n');
    const r = await cli(['feed', 'import', file, '--category', 'vpn', '--priority', '-1', '--json'], { DATA_DIR: dataDir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).priority, -1);
    assert.equal((await cli(['feed', 'import', file, '--category', 'vpn', '--priority', '-101'], { DATA_DIR: dataDir })).code, 1, 'still bounded');
  });

  test('an unusable data directory is one line and exit 2, for serve and every other command', { timeout: 60_000 }, async () => {
    const env = { DATA_DIR: '/proc/nope', PORT: '0', ADMIN_PORT: '0', DEMO: '0' };
    const feed = writeFile(tempDir(), 'vpn.txt', '1.2.3.0/24\n');
    for (const args of [['serve'], ['org', 'list'], ['key', 'list'], ['feed', 'import', feed, '--category', 'vpn']]) {
      const r = await cli(args, env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /^ipsift: (DATA_DIR \/proc\/nope is not (a writable directory|usable)|no data directory at \/proc\/nope)/);
    }
  });

  test('--version names the package version and the runtime; --help names every variable the configuration reads', async () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-V', 'version']) {
      const r = await cli([flag]);
      assert.equal(r.code, 0);
      assert.match(r.stdout, new RegExp(`^ipsift ${pkg.version.replace(/\./g, '\\.')} \\((Node|Bun) [\\d.]+, \\w+-\\w+\\)\n$`));
    }
    const help = (await cli(['--help'])).stdout;
    const read = [...fs.readFileSync(path.join(PROJECT_ROOT, 'src/config.ts'), 'utf8').matchAll(/get\('([A-Z0-9_]+)'\)/g)].map((m) => m[1]);
    assert.ok(read.length > 25, `${read.length} variables found`);
    for (const name of new Set(read)) assert.match(help, new RegExp(`\\b${name}\\b`), `--help omits ${name}`);
  });

  test('org, key and usage commands manage accounts, in text and --json', async () => {
    const env = { DATA_DIR: tempDir() };
    const created = await cli(['org', 'create', '--name', 'Acme', '--plan', 'starter', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    const org = JSON.parse(created.stdout);
    assert.deepEqual([org.name, org.plan, org.quota, org.hard_limit], ['Acme', 'starter', 250000, null]);
    assert.equal((await cli(['org', 'create', '--name', 'X', '--plan', 'gold'], env)).code, 1);
    assert.match((await cli(['org', 'list'], env)).stdout, /Acme {2}plan starter/);
    assert.equal(JSON.parse((await cli(['org', 'limit', org.id, '1000', '--json'], env)).stdout).hard_limit, 1000);
    assert.equal(JSON.parse((await cli(['org', 'plan', org.id, 'free', '--json'], env)).stdout).hard_limit, 1000);
    assert.equal(JSON.parse((await cli(['org', 'limit', org.id, 'default', '--json'], env)).stdout).hard_limit, 50000);
    assert.equal(JSON.parse((await cli(['org', 'limit', org.id, 'none', '--json'], env)).stdout).hard_limit, null);

    const made = await cli(
      [
        'key',
        'create',
        '--org',
        org.id,
        '--name',
        'ci',
        '--scope',
        'db.download',
        '--cidr',
        '10.0.0.0/8',
        '--cidr',
        '2001:db8::/32',
        '--expires',
        '2030-01-01',
        '--json',
      ],
      env,
    );
    assert.equal(made.code, 0, made.stderr);
    const key = JSON.parse(made.stdout);
    assert.deepEqual([key.allowed_scopes, key.allowed_cidrs, key.expires], [['db.download'], ['10.0.0.0/8', '2001:db8::/32'], '2030-01-01T00:00:00.000Z']);
    assert.match(key.key, /^isk_[A-Za-z0-9_-]{32}$/);
    assert.ok(key.key.startsWith(key.key_prefix));
    const bad = await cli(['key', 'create', '--org', org.id, '--name', 'x', '--cidr', '10.0.0.1/8'], env);
    assert.deepEqual([bad.code, /host bits/.test(bad.stderr)], [1, true]);
    const listed = await cli(['key', 'list', '--org', org.id, '--json'], env);
    assert.equal(JSON.parse(listed.stdout).length, 1);
    assert.ok(!listed.stdout.includes(key.key), 'a listing shows a secret');
    const rotated = JSON.parse((await cli(['key', 'rotate', key.id, '--json'], env)).stdout);
    assert.notEqual(rotated.key, key.key);
    const revoked = JSON.parse((await cli(['key', 'revoke', key.id, '--json'], env)).stdout);
    assert.ok(revoked.revoked_at);
    assert.equal((await cli(['key', 'rotate', key.id], env)).code, 1);
    const shown = await cli(['org', 'show', org.id], env);
    assert.match(shown.stdout, /REVOKED/);
    const usage = JSON.parse((await cli(['usage', org.id, '--json'], env)).stdout);
    assert.deepEqual([usage.requests, usage.quota, usage.hard_limit], [0, 50000, null]);
  });

  test('license grant, list and revoke, and publish, manage database access', async () => {
    const env = { DATA_DIR: tempDir() };
    const org = JSON.parse((await cli(['org', 'create', '--name', 'Lic', '--plan', 'scale', '--json'], env)).stdout);
    const granted = await cli(
      ['license', 'grant', '--org', org.id, '--base', 'vpn', '--type', 'subscription', '--starts', '2026-01-01', '--expires', '2099-01-01', '--json'],
      env,
    );
    assert.equal(granted.code, 0, granted.stderr);
    const l = JSON.parse(granted.stdout);
    assert.deepEqual(
      [l.base, l.license_type, l.standing, l.renews_at, l.notice_due_at],
      ['vpn', 'subscription', 'licensed', '2099-01-01T00:00:00.000Z', '2098-12-02T00:00:00.000Z'],
    );
    assert.equal(
      (await cli(['license', 'grant', '--org', org.id, '--base', 'nope', '--type', 'evaluation', '--starts', '2026-01-01', '--expires', '2027-01-01'], env))
        .code,
      1,
    );
    assert.equal(JSON.parse((await cli(['license', 'list', '--org', org.id, '--json'], env)).stdout).length, 1);
    assert.equal((await cli(['license', 'revoke', '--org', org.id, '--base', 'vpn'], env)).code, 0);
    assert.equal(JSON.parse((await cli(['license', 'list', '--json'], env)).stdout).length, 0);
    assert.equal((await cli(['publish'], env)).code, 2); // nothing built yet
    const rows = Array.from({ length: 30 }, (_, i) => `81.7.${2 * i}.0/24,vpn,ExampleVPN`).join('\n');
    const feed = writeFile(env.DATA_DIR, 'f.csv', `network,category,provider\n${rows}\n`);
    await cli(['feed', 'import', feed], env);
    await cli(['build'], env);
    const published = JSON.parse((await cli(['publish', '--json'], env)).stdout);
    // 15 full files (geoip2_anonymous_plus among them); samples of the five range databases holding
    // the 30 VPN networks (ipsift, ipsift_extended, vpn, geoip2_anonymous and its Plus edition),
    // none of the empty ones (proxy, hosting) or the provider catalogues (one provider: too small).
    assert.equal(published.artifacts, 24);
  });
});
