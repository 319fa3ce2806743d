// `ipsift org …`, `ipsift key …`, `ipsift usage …`: the operator's side of accounts.
// Changes reach running servers within AUTH_POLL_MS (they watch the control database).

import os from 'node:os';
import { adminTokenJson, createAdminToken, listAdminTokens, revokeAdminToken } from '../control/admin-tokens.js';
import { recordAudit } from '../control/audit.js';
import { LIMIT_RULE, Operator, listLimit } from '../control/operator.js';
import { openControlDb, type ControlDb } from '../control/control-db.js';
import { loadPlans, type Plans } from '../model/plans.js';
import type { AccountingStore } from '../accounting/accounting-store.js';
import { openAccountingStore } from '../accounting/open-accounting-store.js';
import { UsageError, parse, print, printable } from './common.js';
import { HELP } from './help.js';
import { loadCatalogue } from '../catalogue/catalogue.js';
import type { LicenceType } from '../control/licences.js';
import { publishBuild } from '../pipeline/pipeline.js';
import { readCurrentBuildId } from '../index/builds.js';
import { loadConfig } from '../config.js';

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
  if (values.help || sub === undefined) return print(false, null, () => HELP.org);
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
  if (values.help || sub === undefined) return print(false, null, () => HELP.key);
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
        const reach =
          (k.allowed_scopes as string[]).length === 0
            ? '\nno scope: this key can only look up; give --scope db.download to download databases, --scope apikeys.manage to manage keys'
            : '';
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
  if (values.help) return print(false, null, () => HELP.usage);
  const id = one(positionals, 'organisation id');
  const view = withOperator((op) => op.usage(id));
  print(
    values.json as boolean,
    view,
    () =>
      `${view.org_id}  plan ${view.plan}: ${view.requests} requests of quota ${view.quota}, hard_limit ${view.hard_limit ?? 'none'}, window ${view.window_start} – ${view.window_end}`,
  );
}

async function licenceCommand(sub: string | undefined, args: string[]): Promise<void> {
  const { values } = parse(args, {
    org: { type: 'string' },
    base: { type: 'string' },
    type: { type: 'string' },
    starts: { type: 'string' },
    expires: { type: 'string' },
    'renews-at': { type: 'string' },
    'notice-due-at': { type: 'string' },
  });
  if (values.help || sub === undefined) return print(false, null, () => HELP.license);
  const v = values as Record<string, string | undefined>;
  const json = values.json as boolean;
  withOperator((op) => {
    if (sub === 'grant') {
      if (!v.org || !v.base || !v.type || !v.starts || !v.expires) throw new UsageError('license grant needs --org, --base, --type, --starts and --expires');
      const l = op.grantLicence({
        orgId: v.org,
        base: v.base,
        licenceType: v.type as LicenceType,
        starts: v.starts,
        expires: v.expires,
        renewsAt: v['renews-at'] ?? null,
        noticeDueAt: v['notice-due-at'] ?? null,
      });
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
  const { values, positionals } = parse(sub === 'token' ? args.slice(1) : args, {
    name: { type: 'string' },
    scope: { type: 'string', multiple: true },
    expires: { type: 'string' },
  });
  if (values.help || sub !== 'token' || what === undefined) return print(false, null, () => HELP.admin);
  const json = values.json as boolean;
  const line = (t: View): string =>
    `${t.id}  ${t.token_prefix}…  ${printable(t.name)}  scopes [${(t.scopes as string[]).join(' ')}]${t.expires_at ? `  expires ${t.expires_at}` : ''}${t.revoked_at ? '  REVOKED' : ''}`;
  withDb((db) => {
    const actor = { who: `cli:${userName()}`, source: 'local' };
    if (what === 'create') {
      if (typeof values.name !== 'string') throw new UsageError('admin token create needs --name');
      const { token, secret } = createAdminToken(
        db,
        values.name,
        (values.scope as unknown as string[] | undefined) ?? [],
        (values.expires as string | undefined) ?? null,
      );
      recordAudit(db, actor, 'admin_token.create', null, token.id, {
        name: token.name,
        token_prefix: token.tokenPrefix,
        scopes: token.scopes,
        expires_at: token.expiresAt,
      });
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
  if (values.help) return print(false, null, () => HELP.audit);
  // The API's one rule for every list (listLimit).
  const limit = listLimit((values.limit as string | undefined) ?? null);
  if (limit === null) throw new UsageError(`--${LIMIT_RULE}`);
  const before = values.before === undefined ? undefined : Number(values.before);
  if (before !== undefined && (!Number.isSafeInteger(before) || before < 1)) throw new UsageError('--before is an audit entry id');
  const entries = withOperator((op) => op.auditLog({ orgId: values.org as string | undefined, before, limit }));
  print(values.json as boolean, entries, () =>
    entries.length
      ? entries
          .map(
            (e) =>
              `${e.id}  ${e.at}  ${printable(e.actor)} (${printable(e.source)})  ${e.action}  ${printable(e.org_id ?? '-')}  ${printable(e.target ?? '-')}  ${printable(JSON.stringify(e.detail))}`,
          )
          .join('\n')
      : 'no audit entries',
  );
}

async function publish(args: string[]): Promise<void> {
  const { values } = parse(args, { build: { type: 'string' } });
  if (values.help) return print(false, null, () => HELP.publish);
  const config = loadConfig(process.env);
  const build = (values.build as string | undefined) ?? readCurrentBuildId(config.dataDir);
  if (!build) throw new UsageError('no build to publish: run ipsift build first');
  const r = await publishBuild(config, build);
  print(values.json as boolean, r, () => `published ${r.artifacts} artifacts and the index of build ${build}`);
}

export async function accountCommand(cmd: string, sub: string | undefined, rest: string[]): Promise<void> {
  if (sub?.startsWith('-')) {
    rest = [sub, ...rest];
    sub = undefined;
  }
  if (cmd === 'org') return org(sub, rest);
  if (cmd === 'license') return licenceCommand(sub, rest);
  if (cmd === 'publish') return publish(sub === undefined ? rest : [sub, ...rest]);
  if (cmd === 'key') return key(sub, rest);
  if (cmd === 'admin') return admin(sub, rest);
  if (cmd === 'audit') return audit(sub === undefined ? rest : [sub, ...rest]);
  return usage(sub === undefined ? rest : [sub, ...rest]);
}
