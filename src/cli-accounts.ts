// `ipsift org …`, `ipsift key …`, `ipsift usage …`: the operator's side of accounts.
// Changes reach running servers within AUTH_POLL_MS (they watch the control database).

import {
  AccountError,
  keyJson,
  createKey,
  createOrganisation,
  effectiveHardLimit,
  getKey,
  getOrganisation,
  listKeys,
  listOrganisations,
  planOf,
  revokeKey,
  rotateKey,
  setHardLimit,
  setPlan,
  type ApiKey,
  type Organisation,
} from './accounts/accounts.js';
import { openControlDb, type ControlDb } from './accounts/control-db.js';
import { loadPlans, type Plans } from './accounts/plans.js';
import { AccountingStore } from './accounting/store.js';
import { WindowClock, orgCounter } from './accounting/windows.js';
import { UsageError, parse, print } from './cli-common.js';
import { loadCatalogue } from './catalogue/catalogue.js';
import { grantLicence, listLicences, revokeLicence, standingOf, type Licence, type LicenseType } from './catalogue/licences.js';
import { publishExports } from './catalogue/publish.js';
import { readCurrentBuildId } from './build/builds.js';
import { openStore } from './store/open-store.js';
import { importSources, loadSources } from './feeds/sources.js';
import { loadConfig } from './config.js';

export const ACCOUNT_HELP: Record<string, string> = {
  org: `Usage:
  ipsift org create --name <name> --plan <plan> [--json]
  ipsift org list [--json]
  ipsift org show <org-id> [--json]
  ipsift org plan <org-id> <plan> [--json]
  ipsift org limit <org-id> <requests>|none|default [--json]

Plans come from PLANS_FILE (default config/plans.json). The overage limit (hard_limit) is
the number of requests in the calendar month (UTC) after which lookups answer 429; 'none'
allows overage without limit; 'default' follows the plan (free: its quota; paid: none).`,
  key: `Usage:
  ipsift key create --org <org-id> --name <name> [--scope db.download|apikeys.manage]...
                    [--cidr <cidr>]... [--expires <ISO date-time>] [--json]
  ipsift key list [--org <org-id>] [--json]
  ipsift key show <key-id> [--json]
  ipsift key revoke <key-id> [--json]
  ipsift key rotate <key-id> [--json]

'create' and 'rotate' print the secret once; it is stored only as a hash. Revocations and
rotations reach running servers within a second.`,
  license: `Usage:
  ipsift license grant --org <org-id> --base <base> --type evaluation|subscription
                       --starts <date> --expires <date> [--renews-at <date>] [--notice-due-at <date>] [--json]
  ipsift license revoke --org <org-id> --base <base> [--json]
  ipsift license list [--org <org-id>] [--json]

A licence lets an organisation download a database base (every schema version of it) while
in term. Subscriptions renew at --renews-at (default: expiry); notice is due 30 days before
unless --notice-due-at says otherwise. Bases come from CATALOGUE_FILE (config/catalogue.json).`,
  publish: `Usage: ipsift publish [--build <id>] [--json]

Publishes a build's database exports (default: the serving build) to the object store, where
downloads find them.`,
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
  const db = openControlDb(config.dataDir);
  try {
    return fn(db, loadPlans(config.plansFile), config.dataDir);
  } finally {
    db.close();
  }
}

function orgView(org: Organisation, plans: Plans): Record<string, unknown> {
  const plan = planOf(plans, org);
  return { id: org.id, account_id: org.accountId, name: org.name, plan: org.plan, tier: plan.tier, quota: plan.quota, hard_limit: effectiveHardLimit(org, plan), created_at: org.createdAt };
}


const keyLine = (k: ApiKey): string =>
  `${k.id}  ${k.keyPrefix}…  ${k.name}  org ${k.orgId}  scopes [${k.scopes.join(' ')}]` +
  `${k.allowedCidrs.length ? `  cidrs [${k.allowedCidrs.join(' ')}]` : ''}${k.expires ? `  expires ${k.expires}` : ''}${k.revokedAt ? '  REVOKED' : ''}`;

const orgLine = (o: Record<string, unknown>): string =>
  `${o.id}  account ${o.account_id}  ${o.name}  plan ${o.plan} (${o.tier})  quota ${o.quota}  hard_limit ${o.hard_limit ?? 'none'}`;

function one(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`takes exactly one ${what}`);
  return positionals[0];
}

async function org(sub: string | undefined, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { name: { type: 'string' }, plan: { type: 'string' } });
  if (values.help || sub === undefined) return print(false, null, () => ACCOUNT_HELP.org);
  const json = values.json as boolean;
  withDb((db, plans) => {
    switch (sub) {
      case 'create': {
        if (typeof values.name !== 'string' || typeof values.plan !== 'string') throw new UsageError('org create needs --name and --plan');
        const o = orgView(createOrganisation(db, plans, values.name, values.plan), plans);
        return print(json, o, () => `created organisation ${orgLine(o)}`);
      }
      case 'list': {
        const list = listOrganisations(db).map((o) => orgView(o, plans));
        return print(json, list, () => (list.length ? list.map(orgLine).join('\n') : 'no organisations'));
      }
      case 'show': {
        const o = getOrganisation(db, one(positionals, 'organisation id'));
        if (!o) throw new AccountError(`no organisation ${positionals[0]}`);
        const keys = listKeys(db, o.id);
        const view = { ...orgView(o, plans), keys: keys.map(keyJson) };
        return print(json, view, () => [orgLine(view), ...keys.map((k) => '  key ' + keyLine(k))].join('\n'));
      }
      case 'plan': {
        if (positionals.length !== 2) throw new UsageError('org plan takes an organisation id and a plan');
        const o = orgView(setPlan(db, plans, positionals[0], positionals[1]), plans);
        return print(json, o, () => orgLine(o));
      }
      case 'limit': {
        if (positionals.length !== 2) throw new UsageError('org limit takes an organisation id and a number, none or default');
        const v = positionals[1];
        if (v !== 'none' && v !== 'default' && !/^\d+$/.test(v)) throw new UsageError('the limit is a whole number, none or default');
        const o = orgView(setHardLimit(db, positionals[0], v === 'none' ? null : v === 'default' ? 'default' : Number(v)), plans);
        return print(json, o, () => orgLine(o));
      }
      default:
        throw new UsageError(`unknown org command ${sub}: create, list, show, plan or limit`);
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
  withDb((db) => {
    switch (sub) {
      case 'create': {
        if (typeof v.org !== 'string' || typeof v.name !== 'string') throw new UsageError('key create needs --org and --name');
        const { key: k, secret } = createKey(db, {
          orgId: v.org,
          name: v.name,
          scopes: (v.scope as string[] | undefined) ?? [],
          allowedCidrs: (v.cidr as string[] | undefined) ?? [],
          expires: (v.expires as string | undefined) ?? null,
        });
        return print(json, { ...keyJson(k), key: secret }, () => `created key ${keyLine(k)}\nsecret (shown only now): ${secret}`);
      }
      case 'list': {
        const list = listKeys(db, typeof v.org === 'string' ? v.org : undefined);
        return print(json, list.map(keyJson), () => (list.length ? list.map(keyLine).join('\n') : 'no keys'));
      }
      case 'show': {
        const k = getKey(db, one(positionals, 'key id'));
        if (!k) throw new AccountError(`no API key ${positionals[0]}`);
        return print(json, keyJson(k), () => keyLine(k));
      }
      case 'revoke': {
        const k = revokeKey(db, one(positionals, 'key id'));
        return print(json, keyJson(k), () => `revoked ${keyLine(k)}`);
      }
      case 'rotate': {
        const { key: k, secret } = rotateKey(db, one(positionals, 'key id'));
        return print(json, { ...keyJson(k), key: secret }, () => `rotated ${keyLine(k)}\nnew secret (shown only now): ${secret}`);
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
  const view = withDb((db, plans, dataDir) => {
    const o = getOrganisation(db, id);
    if (!o) throw new AccountError(`no organisation ${id}`);
    const plan = planOf(plans, o);
    const window = new WindowClock().month(Date.now());
    const store = new AccountingStore(dataDir);
    try {
      return {
        org_id: o.id,
        plan: o.plan,
        requests: store.spent(orgCounter(o.id, window)),
        quota: plan.quota,
        hard_limit: effectiveHardLimit(o, plan),
        window_start: new Date(window.startMs).toISOString(),
        window_end: new Date(window.endMs).toISOString(),
      };
    } finally {
      void store.close();
    }
  });
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
  const bases = loadCatalogue(loadConfig(process.env).catalogueFile).bases.map((b) => b.base);
  const view = (l: Licence): Record<string, unknown> => ({
    org_id: l.orgId,
    base: l.base,
    license_type: l.licenseType,
    starts: l.starts,
    expires: l.expires,
    renews_at: l.renewsAt,
    notice_due_at: l.noticeDueAt,
    standing: standingOf(l, Date.now()),
  });
  const line = (l: Licence): string => `${l.orgId}  ${l.base}  ${l.licenseType}  ${l.starts} – ${l.expires}  ${standingOf(l, Date.now())}`;
  withDb((db) => {
    if (sub === 'grant') {
      if (!v.org || !v.base || !v.type || !v.starts || !v.expires) throw new UsageError('license grant needs --org, --base, --type, --starts and --expires');
      const l = grantLicence(
        db,
        { orgId: v.org, base: v.base, licenseType: v.type as LicenseType, starts: v.starts, expires: v.expires, renewsAt: v['renews-at'] ?? null, noticeDueAt: v['notice-due-at'] ?? null },
        bases,
      );
      return print(values.json as boolean, view(l), () => `granted ${line(l)}`);
    }
    if (sub === 'revoke') {
      if (!v.org || !v.base) throw new UsageError('license revoke needs --org and --base');
      if (!revokeLicence(db, v.org, v.base)) throw new AccountError(`organisation ${v.org} holds no licence for ${v.base}`);
      return print(values.json as boolean, { revoked: { org_id: v.org, base: v.base } }, () => `revoked the ${v.base} licence of ${v.org}`);
    }
    if (sub === 'list') {
      const list = listLicences(db, v.org);
      return print(values.json as boolean, list.map(view), () => (list.length ? list.map(line).join('\n') : 'no licences'));
    }
    throw new UsageError(`unknown license command ${sub}: grant, revoke or list`);
  });
}

async function publish(args: string[]): Promise<void> {
  const { values } = parse(args, { build: { type: 'string' } });
  if (values.help) return print(false, null, () => ACCOUNT_HELP.publish);
  const config = loadConfig(process.env);
  const build = (values.build as string | undefined) ?? readCurrentBuildId(config.dataDir);
  if (!build) throw new UsageError('no build to publish: run ipsift build first');
  const db = openControlDb(config.dataDir);
  try {
    const n = await publishExports(db, (await openStore(config)).store, config.dataDir, build);
    print(values.json as boolean, { build, artifacts: n }, () => `published ${n} artifacts of build ${build}`);
  } finally {
    db.close();
  }
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
  return usage(sub === undefined ? rest : [sub, ...rest]);
}
