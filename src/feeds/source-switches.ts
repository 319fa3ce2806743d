// Sources an operator has disabled (DATA_DIR/sources/disabled.json): a disabled source is not
// fetched and its feed is left out of builds until it is enabled again, so one bad upstream
// can be set aside at once without editing SOURCES and restarting. Kept apart from state.json,
// which the pipeline thread rewrites whole on every refresh: the two writers never race.

import { makeDirectory, readJsonFile, writeFileWhole } from '../files.js';
import { disabledSourcesFile, sourcesDir } from '../data-dir.js';

/** Who disabled a source, and when. */
export interface Disabled {
  at: string;
  by: string;
}

export type DisabledSources = Record<string, Disabled>;

export function readDisabledSources(dataDir: string): DisabledSources {
  return readJsonFile<DisabledSources>(disabledSourcesFile(dataDir), {});
}

/**
 * Disables (`by` given) or enables (`by` null) a source; returns whether anything changed.
 * Written whole and renamed, so a reader never sees half a file.
 */
export function switchSource(dataDir: string, name: string, by: string | null, now: Date): boolean {
  const all = readDisabledSources(dataDir);
  if ((by !== null) === name in all) return false;
  if (by === null) delete all[name];
  else all[name] = { at: now.toISOString(), by };
  makeDirectory(sourcesDir(dataDir));
  writeFileWhole(disabledSourcesFile(dataDir), JSON.stringify(all, null, 1));
  return true;
}
