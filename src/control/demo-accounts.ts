// Demo accounts: on a control database with no organisations, one organisation per plan
// with one key each (scopes db.download and apikeys.manage). The keys are printed once and
// written to DATA_DIR/demo-keys.json (mode 0600); they are never shown again.

import fs from 'node:fs';
import type { Logger } from '../log.js';
import { createKey, createOrganisation, listOrganisations } from './accounts.js';
import type { ControlDb } from './control-db.js';
import type { Plans } from '../model/plans.js';
import { grantLicence } from './licences.js';
import { demoKeysFile } from '../data-dir.js';

export interface DemoKey {
  plan: string;
  org_id: string;
  key_id: string;
  key: string;
}

export function ensureDemoAccounts(db: ControlDb, plans: Plans, dataDir: string, log: Logger, bases: readonly string[] = []): DemoKey[] {
  if (listOrganisations(db).length > 0) return [];
  const keys: DemoKey[] = [];
  db.transaction(() => {
    for (const plan of plans.byKey.keys()) {
      const org = createOrganisation(db, plans, `Demo ${plan}`, plan);
      const { key, secret } = createKey(db, { orgId: org.id, name: `demo ${plan} key`, scopes: ['db.download', 'apikeys.manage'] });
      keys.push({ plan, org_id: org.id, key_id: key.id, key: secret });
      // The max organisation holds a year's subscription to every database, so downloads work at once.
      if (plan === 'max') {
        const now = Date.now();
        for (const base of bases) {
          grantLicence(
            db,
            {
              orgId: org.id,
              base,
              licenceType: 'subscription',
              starts: new Date(now - 86_400_000).toISOString(),
              expires: new Date(now + 365 * 86_400_000).toISOString(),
            },
            bases,
          );
        }
      }
    }
  });
  const file = demoKeysFile(dataDir);
  fs.writeFileSync(file, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  // Shown once, as one JSON line on stdout: the log (stderr) never carries secrets, and this
  // line is the only output that does (README, "Quick start").
  process.stdout.write(
    JSON.stringify({
      time: new Date().toISOString(),
      level: 'info',
      msg: 'demo API keys, shown only now',
      file,
      keys: keys.map((k) => ({ plan: k.plan, key: k.key })),
    }) + '\n',
  );
  log.info('demo organisations created', { organisations: keys.map((k) => ({ plan: k.plan, org_id: k.org_id, key_id: k.key_id })) });
  return keys;
}
