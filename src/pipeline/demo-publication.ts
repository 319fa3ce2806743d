// Demo: when nothing has been published yet, publish the serving build's exports to the
// local store, so the database endpoints work on a fresh data directory.

import type { ControlDb } from '../control/control-db.js';
import { readCurrentBuildId } from '../index/builds.js';
import type { Logger } from '../log.js';
import type { ObjectStore } from '../objects/object-store.js';
import { publishExports } from './publish.js';
import { publicationCount } from '../control/publications.js';

export async function ensureDemoPublication(db: ControlDb, store: ObjectStore, dataDir: string, log: Logger): Promise<void> {
  const published = publicationCount(db);
  const build = readCurrentBuildId(dataDir);
  if (published > 0 || !build) return;
  try {
    const n = await publishExports(db, store, dataDir, build);
    log.info('demo databases published', { build, artifacts: n });
  } catch (e) {
    log.warn('demo databases not published', { build, reason: e instanceof Error ? e.message : String(e) });
  }
}
