// First start on an empty data directory: import the bundled demo feeds (demo/, listed with
// their import options in feeds.json) and build, so `npm start` serves at once. They live
// outside the data directory, so removing that directory starts afresh rather than loses them.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBuild } from './build/build.js';
import { listBuilds } from './index/builds.js';
import { importFeed, type ImportOptions } from './feeds/import.js';
import { IpsiftError } from './errors.js';
import { feedNameFromFile, listFeeds, removeFeed } from './feeds/feed-store.js';
import type { Logger } from './log.js';

export const DEMO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../demo');

type DemoFeed = Omit<ImportOptions, 'dataDir' | 'file'> & { file: string };

export function ensureDemo(dataDir: string, log: Logger, demoDir = DEMO_DIR): boolean {
  if (listFeeds(dataDir).length > 0 || listBuilds(dataDir).length > 0) return false;
  const list = path.join(demoDir, 'feeds.json');
  if (!fs.existsSync(list)) {
    throw new IpsiftError(
      'DEMO_MISSING',
      `the data directory ${dataDir} holds no feeds and the bundled demo feeds are missing (${list}): import feeds and build (ipsift feed import, ipsift build), or reinstall ipsift`,
    );
  }
  const feeds = JSON.parse(fs.readFileSync(list, 'utf8')) as DemoFeed[];
  for (const feed of feeds) {
    const r = importFeed({ ...feed, dataDir, file: path.join(demoDir, feed.file) });
    log.info('demo feed imported', { feed: r.name, rows: r.rows });
  }
  const { id, manifest } = runBuild({ dataDir });
  log.info('demo build serving', { build: id, v4_intervals: manifest.index.v4, v6_intervals: manifest.index.v6 });
  return true;
}

/**
 * Configured sources replace the demo: its synthetic feeds, imported on an earlier start of the
 * same data directory, would otherwise answer beside real data. Returns the names removed.
 */
export function removeDemoFeeds(dataDir: string, log: Logger, demoDir = DEMO_DIR): string[] {
  const list = path.join(demoDir, 'feeds.json');
  if (!fs.existsSync(list)) return [];
  const names = (JSON.parse(fs.readFileSync(list, 'utf8')) as DemoFeed[]).map((f) => f.name ?? feedNameFromFile(f.file));
  const removed = names.filter((n) => removeFeed(dataDir, n));
  if (removed.length) log.info('demo feeds removed: the configured sources replace them at the next build', { feeds: removed });
  return removed;
}
