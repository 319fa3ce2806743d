// Build directories: $DATA_DIR/builds/<YYYYMMDD>-<n>/, immutable once renamed into place,
// and the CURRENT pointer naming the build that serves. Serving a build = replacing CURRENT
// atomically (write + rename), which every running server notices and hot-swaps to.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CHANGES_FILE, INDEX_FILE, MANIFEST_FILE, buildDir, buildsDir, currentPointerFile, servingLogFile } from '../data-dir.js';

const BUILD_ID = /^\d{8}-\d+$/;

export function listBuilds(dataDir: string): string[] {
  const dir = buildsDir(dataDir);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((d) => BUILD_ID.test(d))
    .sort((a, b) => {
      const [da, na] = a.split('-');
      const [db, nb] = b.split('-');
      return da === db ? Number(na) - Number(nb) : da < db ? -1 : 1;
    });
}

/** The day a build id begins with, for a build made at `nowMs` (its UTC date, YYYYMMDD). */
export const buildIdDay = (nowMs: number): string => new Date(nowMs).toISOString().slice(0, 10).replaceAll('-', '');

/** The day of a build id (buildIdDay of when it was made). */
export const dayOfBuildId = (id: string): string => id.slice(0, 8);

/** Next id for a build made at `now` (UTC date, then a sequence number within the day). */
export function nextBuildId(dataDir: string, now: Date): string {
  const day = buildIdDay(now.getTime());
  const taken = listBuilds(dataDir)
    .filter((id) => id.startsWith(day + '-'))
    .map((id) => Number(id.slice(9)));
  return `${day}-${taken.length ? Math.max(...taken) + 1 : 1}`;
}

export function readCurrentBuildId(dataDir: string): string | null {
  try {
    const id = fs.readFileSync(currentPointerFile(dataDir), 'utf8').trim();
    return BUILD_ID.test(id) ? id : null;
  } catch {
    return null;
  }
}

/**
 * Makes a build the serving one (CURRENT): running servers switch to it within INDEX_POLL_MS.
 * The switch is appended to the serving log, the record of which build served from when.
 */
export function makeServing(dataDir: string, id: string, now = new Date()): void {
  if (!fs.existsSync(path.join(buildDir(dataDir, id), INDEX_FILE))) throw new Error(`build ${id} has no index`);
  const file = currentPointerFile(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, id + '\n');
  fs.renameSync(tmp, file);
  // One line, appended whole (O_APPEND): processes sharing the directory never interleave it.
  fs.appendFileSync(servingLogFile(dataDir), `${JSON.stringify({ build: id, from: now.toISOString(), node: os.hostname() })}\n`);
}

/** One span of the serving log: a build, from when it served, to when the next one did (null: serving still). */
export interface ServingSpan {
  build: string;
  from: string;
  to: string | null;
  node: string;
}

/** The serving log, oldest first, each span ended by the next (lines that do not parse are skipped). */
export function readServingLog(dataDir: string): ServingSpan[] {
  let text: string;
  try {
    text = fs.readFileSync(servingLogFile(dataDir), 'utf8');
  } catch {
    return [];
  }
  const entries: { build: string; from: string; node: string }[] = [];
  for (const line of text.split('\n')) {
    try {
      const e = JSON.parse(line) as { build?: unknown; from?: unknown; node?: unknown };
      if (typeof e.build === 'string' && BUILD_ID.test(e.build) && typeof e.from === 'string' && !Number.isNaN(Date.parse(e.from)))
        entries.push({ build: e.build, from: e.from, node: typeof e.node === 'string' ? e.node : '' });
    } catch {
      // a line cut short by a crash, or empty
    }
  }
  return entries.map((e, i) => ({ ...e, to: entries[i + 1]?.from ?? null }));
}

/** A build as listed: its id, whether it serves, when it was made, the index's size. */
export interface BuildSummary {
  id: string;
  current: boolean;
  created: string;
  bytes: number;
  /** Whether it recorded what it changed against the build before it (GET /admin/v1/builds/{id}/changes). */
  compared: boolean;
}

/** Every build, oldest first, with the serving one marked. */
export function buildSummaries(dataDir: string): BuildSummary[] {
  const current = readCurrentBuildId(dataDir);
  return listBuilds(dataDir).map((id) => {
    const manifest = readManifest(dataDir, id) as { created: string; index: { bytes: number } };
    return {
      id,
      current: id === current,
      created: manifest.created,
      bytes: manifest.index.bytes,
      compared: fs.existsSync(path.join(buildDir(dataDir, id), CHANGES_FILE)),
    };
  });
}

/**
 * A build's manifest as written (build/build.ts BuildManifest: feeds, ranges, exports,
 * timings), but for one name: builds before 2026-11-27 wrote
 * `published` for what is `made_serving` (made the serving build when built; publishing is
 * the upload to the store, which a manifest does not record).
 */
export function readManifest(dataDir: string, id: string): unknown {
  const m = JSON.parse(fs.readFileSync(path.join(buildDir(dataDir, id), MANIFEST_FILE), 'utf8')) as Record<string, unknown>;
  if ('published' in m && !('made_serving' in m)) {
    const { published, ...rest } = m;
    return { id: rest.id, created: rest.created, made_serving: published, ...rest };
  }
  return m;
}
