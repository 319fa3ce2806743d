// The timeline's file (DATA_DIR/history/timeline.bin) and how it keeps up with the serving
// log: after a build serves, the spans the timeline has not recorded are added, each from its
// build's index while the build is on disk (one whose build was pruned first is recorded as
// lost). A missing file is rebuilt the same way from the whole serving log. Readers (the
// front ends answering `?at=`) load it again when it changes.

import fs from 'node:fs';
import path from 'node:path';
import { INDEX_FILE, buildDir, timelineFile } from '../data-dir.js';
import { makeDirectory, writeFileWhole } from '../files.js';
import { readServingLog } from '../index/builds.js';
import { RangeIndex } from '../index/range-index.js';
import { Timeline } from './timeline.js';

/** How long answers are kept by default (days): a year. */
export const DEFAULT_HISTORY_DAYS = 365;

export function readTimeline(dataDir: string): Timeline | null {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(timelineFile(dataDir));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  return Timeline.fromBytes(bytes);
}

export function writeTimeline(dataDir: string, t: Timeline): void {
  const file = timelineFile(dataDir);
  makeDirectory(path.dirname(file));
  writeFileWhole(file, t.toBytes());
  // The JSON form of the first history release: its spans are made again from the builds.
  fs.rmSync(path.join(path.dirname(file), 'timeline.json'), { force: true });
}

function readIndex(dataDir: string, id: string): RangeIndex | null {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(path.join(buildDir(dataDir, id), INDEX_FILE));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  return new RangeIndex(bytes.byteOffset % 4 === 0 ? bytes : Uint8Array.from(bytes), { trusted: true });
}

/**
 * Adds to the timeline every span of the serving log it has not recorded, forgets what is
 * older than `days`, and writes it; returns it. Idempotent: with nothing new, nothing is written.
 */
export function updateTimeline(dataDir: string, nowMs: number, days = DEFAULT_HISTORY_DAYS): Timeline {
  const t = readTimeline(dataDir) ?? new Timeline();
  const last = t.last;
  let changed = false;
  for (const span of readServingLog(dataDir)) {
    const from = Math.floor(Date.parse(span.from) / 1000);
    if (last !== null && (from < last.from || (from === last.from && span.build === last.build))) continue;
    const index = readIndex(dataDir, span.build);
    if (index === null) t.lose(span.build, from);
    else t.extend(span.build, from, index);
    changed = true;
  }
  const cutoff = Math.floor(nowMs / 1000) - days * 86_400;
  if (cutoff > t.keptFrom) {
    t.forgetBefore(cutoff);
    changed = true;
  }
  if (changed) writeTimeline(dataDir, t);
  return t;
}

/** A front end's view of the timeline: loaded on first use, again when the file changes (looked at once a second at most). */
export class TimelineReader {
  private timeline: Timeline | null = null;
  private mtimeMs = -1;
  private checkedMs = -Infinity;

  constructor(private readonly dataDir: string) {}

  get(nowMs: number): Timeline | null {
    if (nowMs - this.checkedMs < 1000) return this.timeline;
    this.checkedMs = nowMs;
    let mtimeMs: number;
    try {
      mtimeMs = fs.statSync(timelineFile(this.dataDir)).mtimeMs;
    } catch {
      return (this.timeline = null);
    }
    if (mtimeMs !== this.mtimeMs) {
      this.timeline = readTimeline(this.dataDir);
      this.mtimeMs = mtimeMs;
    }
    return this.timeline;
  }
}
