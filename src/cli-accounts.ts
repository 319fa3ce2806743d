// `ipsift org …`, `ipsift key …`, `ipsift usage …`: the operator's side of accounts.
// Changes reach running servers within AUTH_POLL_MS (they watch the control database).

import os from 'node:os';
import { adminTokenJson, createAdminToken, listAdminTokens, revokeAdminToken } from './control/admin-tokens.js';
import { recordAudit } from './control/audit.js';
import { LIMIT_RULE, Operator, listLimit } from './control/operator.js';
import { openControlDb, type ControlDb } from './control/control-db.js';
import { loadPlans, type Plans } from './model/plans.js';
import type { AccountingStore } from './accounting/store.js';
import { openAccountingStore } from './accounting/open-store.js';
import { UsageError, parse, print, printable } from './cli-common.js';
import { loadCatalogue } from './catalogue/catalogue.js';
import type { LicenseType } from './control/licences.js';
import { publishExports } from './publish/publish.js';
import { publishIndexReplica } from './replica/index-replica.js';
import { readCurrentBuildId } from './index/builds.js';
import { openStore } from './store/open-store.js';
import { importSources, loadSources } from './feeds/sources.js';
import { loadConfig, type Config } from './config.js';

export const ACCOUNT_HELP: Record<string, string> = {
  org: `Usage:
  ipsift org create --name <name> --plan <plan> [--json]
  ipsift org list [--json]
  ipsift org show <org-id> [--json]
  ipsift org plan <org-id> <plan> [--json]
  ipsift org limit <org-id> <requests>|none|default [--json]
  ipsift org delete <org-id> [--json]

Plans come from PLANS_FILE (default config/plans.json). The overage limit (hard_limit) is
the number of requests in the calendar month (UTC) after which lookups answer 429; 'none'
allows overage without limit; 'default' follows the plan (free: its quota; paid: none).
'delete' revokes the organisation's keys and ends its licences at once; the organisation is
kept, marked deleted (list --deleted shows it), so its download history and audit entries
keep their subject and its ids are never reused. Every change is in the audit log.`,
  admin: `Usage:
  ipsift admin token create --name <name> --scope admin.read|admin.write [--json]
  ipsift admin token list [--json]
  ipsift admin token revoke <token-id> [--json]

Operator tokens authenticate the admin API (/admin/v1/… on the admin port): admin.read may
read organisations, keys, licences, usage, downloads and the audit log; admin.write may also
change them. The secret (iat_…) is printed once and stored only as a hash.`,
  audit: `Usage: ipsift audit [--org <org-id>] [--limit <n, at most 200 taken>] [--before <entry id>] [--json]

The audit log, newest first: every change to organisations, licences, keys and operator
tokens, by the CLI (cli:<user>), the admin API (admin:<token id>) or a key managing keys
(key:<key id>), with where from. Entries never hold a secret.`,
  key: `Usage:
  ipsift key create --org <org-id> --name <name> [--scope db.download|apikeys.manage]...
                    [--cidr <cidr>]... [--expires <ISO date-time>] [--json]
  ipsift key list [--org <org-id>] [--json]
  ipsift key show <key-id> [--json]
  ipsift key revoke <key-id> [--json]
  ipsift key rotate <key-id> [--json]

'create' and 'rotate' print the secret once; it is stored only as a hash. Revocations and
rotations reach running servers within a second. A key made without --scope can only look up:
db.download lets it download databases, apikeys.manage lets it manage its organisation's keys.
An organisation holds at most MAX_KEYS_PER_ORG live keys (default 1000).`,
  license: `Usage:
  ipsift license grant --org <org-id> --base <base> --type evaluation|subscription
                       --starts <date> --expires <date> [--renews-at <date>] [--notice-due-at <date>] [--json]
  ipsift license revoke --org <org-id> --base <base> [--json]
  ipsift license list [--org <org-id>] [--json]

A licence lets an organisation download a database base (every schema version of it) while
in term. Subscriptions renew at --renews-at (default: expiry); notice is due 30 days before
unless --notice-due-at says otherwise. Bases come from CATALOGUE_FILE (config/catalogue.json).`,
  publish: `Usage: ipsift publish [--build <id>] [--json]

Publishes a build's database files (default: the serving build) and then its index to the
object store, where downloads and serving nodes find them. 'ipsift build' already does this
for the build it makes; publish again after 'ipsift build --no-publish', or to another store.`,
  sources: `Usage: ipsift sources import [--file <sources.json>] [--json]

Imports every source of the sources file (default: SOURCES_FILE) as a feed named after it:
[{"name", "path" | "url", "format" (default auto), "category", "provider", "details",
"skip_invalid"}]. Paths are relative to the file; URLs are fetched with a timeout, and a
failed fetch falls back to the last good copy. A failing source is reported; the others
are imported all the same. The daily scheduled build runs this first.`,
  usage: `Usage: ipsift usage <org-id> [--json]

Requests counted in the current calendar month (UTC) against the plan's quota and the
overage limit. Running servers hold small leases (at most a few hundred requests each, given
back after a second idle), which count as used until returned.`,
};

function withDb<T>(fn: (db: ControlDb, plans: Plans, dataDir: string) => T): T {
  const config = loadConfig(process.env);
  const db = openControlDb(config.dataDir, config.controlDb);
  try {
    return fn(db, loadPlans(config.plansFile), config.dataDir);
  } finally {
    db.close();
  }
}

/** The service layer the admin API uses too, acting as this OS user. */
function withOperator<T>(fn: (op: Operator) => T): T {
  return withDb((db, plans, dataDir) => {
    const config = loadConfig(process.env);
    const bases = loadCatalogue(config.catalogueFile).bases.map((b) => b.base);
    const opened: AccountingStore[] = [];
    const spent = (counter: string): number => {
      if (opened.length === 0) opened.push(openAccountingStore(config.accounting, dataDir));
      return opened[0].spent(counter);
    };
    try {
      return fn(new Operator({ db, plans, bases, spent, maxKeysPerOrg: config.maxKeysPerOrg }, { who: `cli:${userName()}`, source: 'local' }));
    } finally {
      for (const s of opened) void s.close();
    }
  });
}

function userName(): string {
  try {
    return os.userInfo().username;
  } catch {
    return String(process.getuid?.() ?? 'unknown');
  }
}

type View = Record<string, unknown>;

const keyLine = (k: View): string =>
  `${k.id}  ${k.key_prefix}…  ${printable(k.name)}  org ${k.org_id}  scopes [${(k.allowed_scopes as string[]).join(' ')}]` +
  `${(k.allowed_cidrs as string[]).length ? `  cidrs [${(k.allowed_cidrs as string[]).join(' ')}]` : ''}${k.expires ? `  expires ${k.expires}` : ''}${k.revoked_at ? '  REVOKED' : ''}`;

const orgLine = (o: View): string =>
  `${o.id}  account ${o.account_id}  ${printable(o.name)}  plan ${o.plan} (${o.tier})  quota ${o.quota}  hard_limit ${o.hard_limit ?? 'none'}${o.deleted_at ? `  DELETED ${o.deleted_at}` : ''}`;

const licenceLine = (l: View): string => `${l.org_id}  ${l.base}  ${l.license_type}  ${l.starts} – ${l.expires}  ${l.standing}`;

function one(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`takes exactly one ${what}`);
  return positionals[0];
}

async function org(sub: string | undefined, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { name: { type: 'string' }, plan: { type: 'string' }, deleted: { type: 'boolean' } });
  if (values.help || sub === undefined) return print(false, null, () => ACCOUNT_HELP.org);
  const json = values.json as boolean;
  withOperator((op) => {
    switch (sub) {
      case 'create': {
        if (typeof values.name !== 'string' || typeof values.plan !== 'string') throw new UsageError('org create needs --name and --plan');
        const o = op.createOrganisation(values.name, values.plan);
        return print(json, o, () => `created organisation ${orgLine(o)}`);
      }
      case 'list': {
        const list = op.listOrganisations(values.deleted === true);
        return print(json, list, () => (list.length ? list.map(orgLine).join('\n') : 'no organisations'));
      }
      case 'show': {
        const view = op.showOrganisation(one(positionals, 'organisation id'));
        const more = view.keys_next ? [`  … more keys: ipsift key list --org ${view.id}`] : [];
        return print(json, view, () => [orgLine(view), ...(view.keys as View[]).map((k) => '  key ' + keyLine(k)), ...more].join('\n'));
      }
      case 'plan': {
        if (positionals.length !== 2) throw new UsageError('org plan takes an organisation id and a plan');
        const o = op.setPlan(positionals[0], positionals[1]);
        return print(json, o, () => orgLine(o));
      }
      case 'limit': {
        if (positionals.length !== 2) throw new UsageError('org limit takes an organisation id and a number, none or default');
        const v = positionals[1];
        if (v !== 'none' && v !== 'default' && !/^\d+$/.test(v)) throw new UsageError('the limit is a whole number, none or default');
        const o = op.setHardLimit(positionals[0], v);
        return print(json, o, () => orgLine(o));
      }
      case 'delete': {
        const o = op.deleteOrganisation(one(positionals, 'organisation id'));
        return print(json, o, () => `deleted ${orgLine(o)}: ${o.keys_revoked} keys revoked, ${o.licences_ended} licences ended`);
      }
      default:
        throw new UsageError(`unknown org command ${sub}: create, list, show, plan, limit or delete`);
    }
  });
}

async function key(sub: string | undefined, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, {
    org: { type: 'string' },
    name: { type: 'string' },
    scope: { type: 'string', multiple: true },
    cidr: { type: 'string', multiple: true },
    expires: { type: 'string' },
  });
  if (values.help || sub === undefined) return print(false, null, () => ACCOUNT_HELP.key);
  const json = values.json as boolean;
  const v = values as Record<string, string | string[] | boolean | undefined>;
  withOperator((op) => {
    switch (sub) {
      case 'create': {
        if (typeof v.org !== 'string' || typeof v.name !== 'string') throw new UsageError('key create needs --org and --name');
        const k = op.createKey(v.org, {
          name: v.name,
          scopes: (v.scope as string[] | undefined) ?? [],
          allowedCidrs: (v.cidr as string[] | undefined) ?? [],
          expires: (v.expires as string | undefined) ?? null,
        });
        // A key with no scope looks up (GET /{ip}, /batch, /api/v1/account/me) and nothing else.
        const reach = (k.allowed_scopes as string[]).length === 0 ? '\nno scope: this key can only look up; give --scope db.download to download databases, --scope apikeys.manage to manage keys' : '';
        return print(json, k, () => `created key ${keyLine(k)}\nsecret (shown only now): ${k.key}${reach}`);
      }
      case 'list': {
        const list = op.listKeys(typeof v.org === 'string' ? v.org : undefined);
        return print(json, list, () => (list.length ? list.map(keyLine).join('\n') : 'no keys'));
      }
      case 'show': {
        const k = op.showKey(one(positionals, 'key id'));
        return print(json, k, () => keyLine(k));
      }
      case 'revoke': {
        const k = op.revokeKey(one(positionals, 'key id'));
        return print(json, k, () => `revoked ${keyLine(k)}`);
      }
      case 'rotate': {
        const k = op.rotateKey(one(positionals, 'key id'));
        return print(json, k, () => `rotated ${keyLine(k)}\nnew secret (shown only now): ${k.key}`);
      }
      default:
        throw new UsageError(`unknown key command ${sub}: create, list, show, revoke or rotate`);
    }
  });
}

async function usage(args: string[]): Promise<void> {
  const { values, positionals } = parse(args);
  if (values.help) return print(false, null, () => ACCOUNT_HELP.usage);
  const id = one(positionals, 'organisation id');
  const view = withOperator((op) => op.usage(id));
  print(values.json as boolean, view, () =>
    `${view.org_id}  plan ${view.plan}: ${view.requests} requests of quota ${view.quota}, hard_limit ${view.hard_limit ?? 'none'}, window ${view.window_start} – ${view.window_end}`,
  );
}

async function license(sub: string | undefined, args: string[]): Promise<void> {
  const { values } = parse(args, {
    org: { type: 'string' },
    base: { type: 'string' },
    type: { type: 'string' },
    starts: { type: 'string' },
    expires: { type: 'string' },
    'renews-at': { type: 'string' },
    'notice-due-at': { type: 'string' },
  });
  if (values.help || sub === undefined) return print(false, null, () => ACCOUNT_HELP.license);
  const v = values as Record<string, string | undefined>;
  const json = values.json as boolean;
  withOperator((op) => {
    if (sub === 'grant') {
      if (!v.org || !v.base || !v.type || !v.starts || !v.expires) throw new UsageError('license grant needs --org, --base, --type, --starts and --expires');
      const l = op.grantLicence({ orgId: v.org, base: v.base, licenseType: v.type as LicenseType, starts: v.starts, expires: v.expires, renewsAt: v['renews-at'] ?? null, noticeDueAt: v['notice-due-at'] ?? null });
      return print(json, l, () => `granted ${licenceLine(l)}`);
    }
    if (sub === 'revoke') {
      if (!v.org || !v.base) throw new UsageError('license revoke needs --org and --base');
      const r = op.revokeLicence(v.org, v.base);
      return print(json, r, () => `revoked the ${v.base} licence of ${v.org}`);
    }
    if (sub === 'list') {
      const list = op.listLicences(v.org);
      return print(json, list, () => (list.length ? list.map(licenceLine).join('\n') : 'no licences'));
    }
    throw new UsageError(`unknown license command ${sub}: grant, revoke or list`);
  });
}

async function admin(sub: string | undefined, args: string[]): Promise<void> {
  const what = sub === 'token' ? args[0] : undefined;
  const { values, positionals } = parse(sub === 'token' ? args.slice(1) : args, { name: { type: 'string' }, scope: { type: 'string', multiple: true } });
  if (values.help || sub !== 'token' || what === undefined) return print(false, null, () => ACCOUNT_HELP.admin);
  const json = values.json as boolean;
  const line = (t: View): string => `${t.id}  ${t.token_prefix}…  ${printable(t.name)}  scopes [${(t.scopes as string[]).join(' ')}]${t.revoked_at ? '  REVOKED' : ''}`;
  withDb((db) => {
    const actor = { who: `cli:${userName()}`, source: 'local' };
    if (what === 'create') {
      if (typeof values.name !== 'string') throw new UsageError('admin token create needs --name');
      const { token, secret } = createAdminToken(db, values.name, (values.scope as unknown as string[] | undefined) ?? []);
      recordAudit(db, actor, 'admin_token.create', null, token.id, { name: token.name, token_prefix: token.tokenPrefix, scopes: token.scopes });
      const view = { ...adminTokenJson(token), token: secret };
      return print(json, view, () => `created operator token ${line(view)}\nsecret (shown only now): ${secret}`);
    }
    if (what === 'list') {
      const list = listAdminTokens(db).map(adminTokenJson);
      return print(json, list, () => (list.length ? list.map(line).join('\n') : 'no operator tokens'));
    }
    if (what === 'revoke') {
      const t = adminTokenJson(revokeAdminToken(db, one(positionals, 'token id')));
      recordAudit(db, actor, 'admin_token.revoke', null, String(t.id), { token_prefix: t.token_prefix });
      return print(json, t, () => `revoked ${line(t)}`);
    }
    throw new UsageError(`unknown admin token command ${what}: create, list or revoke`);
  });
}

async function audit(args: string[]): Promise<void> {
  const { values } = parse(args, { org: { type: 'string' }, limit: { type: 'string' }, before: { type: 'string' } });
  if (values.help) return print(false, null, () => ACCOUNT_HELP.audit);
  // The API's one rule for every list (listLimit).
  const limit = listLimit((values.limit as string | undefined) ?? null);
  if (limit === null) throw new UsageError(`--${LIMIT_RULE}`);
  const before = values.before === undefined ? undefined : Number(values.before);
  if (before !== undefined && (!Number.isSafeInteger(before) || before < 1)) throw new UsageError('--before is an audit entry id');
  const entries = withOperator((op) => op.auditLog({ orgId: values.org as string | undefined, before, limit }));
  print(values.json as boolean, entries, () =>
    entries.length ? entries.map((e) => `${e.id}  ${e.at}  ${printable(e.actor)} (${printable(e.source)})  ${e.action}  ${printable(e.org_id ?? '-')}  ${printable(e.target ?? '-')}  ${printable(JSON.stringify(e.detail))}`).join('\n') : 'no audit entries',
  );
}

/** What publishing a build put in the object store. */
export interface PublicationReport {
  build: string;
  artifacts: number;
  index: Awaited<ReturnType<typeof publishIndexReplica>>;
}

/** Puts a build's database files, then its index, into the configured object store. */
export async function publishBuild(config: Config, build: string): Promise<PublicationReport> {
  const db = openControlDb(config.dataDir, config.controlDb);
  try {
    const { store } = await openStore(config);
    const n = await publishExports(db, store, config.dataDir, build);
    // The index last: followers (ROLE=serve) switch once it is there, with the exports in place.
    const index = await publishIndexReplica(store, config.dataDir, build);
    return { build, artifacts: n, index };
  } finally {
    db.close();
  }
}

async function publish(args: string[]): Promise<void> {
  const { values } = parse(args, { build: { type: 'string' } });
  if (values.help) return print(false, null, () => ACCOUNT_HELP.publish);
  const config = loadConfig(process.env);
  const build = (values.build as string | undefined) ?? readCurrentBuildId(config.dataDir);
  if (!build) throw new UsageError('no build to publish: run ipsift build first');
  const r = await publishBuild(config, build);
  print(values.json as boolean, r, () => `published ${r.artifacts} artifacts and the index of build ${build}`);
}

async function sources(sub: string | undefined, args: string[]): Promise<void> {
  const { values } = parse(args, { file: { type: 'string' } });
  if (values.help || sub === undefined) return print(false, null, () => ACCOUNT_HELP.sources);
  if (sub !== 'import') throw new UsageError(`unknown sources command ${sub}: import`);
  const config = loadConfig(process.env);
  const file = (values.file as string | undefined) ?? config.sourcesFile;
  if (!file) throw new UsageError('no sources file: give --file or set SOURCES_FILE');
  const reports = await importSources(config.dataDir, loadSources(file));
  print(values.json as boolean, reports, () =>
    reports
      .map((r) => `${r.ok ? 'ok  ' : 'FAIL'} ${r.name}: ${r.rows} networks${r.skipped ? `, ${r.skipped} skipped` : ''}${r.fetch ? ` (${r.fetch})` : ''}${r.error ? ` — ${r.error}` : ''}`)
      .join('\n'),
  );
}

export async function accountCommand(cmd: string, sub: string | undefined, rest: string[]): Promise<void> {
  if (sub?.startsWith('-')) {
    rest = [sub, ...rest];
    sub = undefined;
  }
  if (cmd === 'org') return org(sub, rest);
  if (cmd === 'license') return license(sub, rest);
  if (cmd === 'sources') return sources(sub, rest);
  if (cmd === 'publish') return publish(sub === undefined ? rest : [sub, ...rest]);
  if (cmd === 'key') return key(sub, rest);
  if (cmd === 'admin') return admin(sub, rest);
  if (cmd === 'audit') return audit(sub === undefined ? rest : [sub, ...rest]);
  return usage(sub === undefined ? rest : [sub, ...rest]);
}
