// Index replicas: a builder puts each published build's index into the object store, and
// serving nodes (ROLE=serve) follow it there.
//
// In the store: index/<build>/index.bin and index/<build>/manifest.json, then the pointer
// index/CURRENT.json ({build, sha256, bytes}) written last, so a follower never sees a
// pointer to a build not wholly uploaded. A follower polls the pointer; a build it does not
// hold is downloaded beside the others, checked (the file's SHA-256 against the pointer and
// the manifest, then read as an index) and only then renamed into builds/ and made current —
// the serving process hot-swaps to it as it does for a local build. A build that fails its
// check is never served: the old one stays, and that build is not fetched again until the
// pointer names another.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { listBuilds, makeServing, readCurrentBuildId } from '../index/builds.js';
import { IpsiftError, reasonOf } from '../errors.js';
import { loadIndexFile } from '../index/loader.js';
import type { Logger } from '../log.js';
import type { ObjectStore } from '../objects/object-store.js';
import { makeDirectory } from '../files.js';
import { INDEX_FILE, MANIFEST_FILE, buildDir, buildsDir } from '../data-dir.js';

export const POINTER_KEY = 'index/CURRENT.json';
const BUILD_ID = /^\d{8}-\d+$/;
/** Builds a follower keeps: the serving one and the one before it (a node may still be swapping). */
const KEEP_BUILDS = 2;

export interface ReplicaPointer {
  build: string;
  sha256: string;
  bytes: number;
}

interface BuildManifest {
  index: { sha256: string; bytes: number };
}

const readManifest = (file: string): BuildManifest => JSON.parse(fs.readFileSync(file, 'utf8')) as BuildManifest;

/** Puts the build's index and manifest into the store, then points followers at it. */
export async function publishIndexReplica(store: ObjectStore, dataDir: string, buildId: string): Promise<ReplicaPointer> {
  const dir = buildDir(dataDir, buildId);
  const manifest = readManifest(path.join(dir, MANIFEST_FILE));
  await store.put(`index/${buildId}/${INDEX_FILE}`, path.join(dir, INDEX_FILE));
  await store.put(`index/${buildId}/${MANIFEST_FILE}`, path.join(dir, MANIFEST_FILE));
  const pointer: ReplicaPointer = { build: buildId, sha256: manifest.index.sha256, bytes: manifest.index.bytes };
  const tmp = path.join(buildsDir(dataDir), `.replica-pointer.${process.pid}.${crypto.randomBytes(4).toString('hex')}.json`);
  fs.writeFileSync(tmp, JSON.stringify(pointer));
  try {
    await store.put(POINTER_KEY, tmp);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return pointer;
}

function parsePointer(text: string): ReplicaPointer {
  const p = JSON.parse(text) as Partial<ReplicaPointer>;
  if (
    typeof p.build !== 'string' ||
    !BUILD_ID.test(p.build) ||
    typeof p.sha256 !== 'string' ||
    !/^[0-9a-f]{64}$/.test(p.sha256) ||
    !Number.isSafeInteger(p.bytes)
  ) {
    throw new Error(`${POINTER_KEY} is not a replica pointer`);
  }
  return p as ReplicaPointer;
}

export interface FollowerState {
  /** The build the store points at, as last read (null: never read). */
  readonly published: string | null;
  readonly checkedAt: Date | null;
  /** Why the last check failed, or null. */
  readonly error: string | null;
}

export class IndexFollower {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** A build that failed its check, by build and digest: not fetched again while the pointer names it. */
  private rejected: string | null = null;
  private status: FollowerState = { published: null, checkedAt: null, error: null };

  constructor(
    private readonly store: ObjectStore,
    private readonly dataDir: string,
    private readonly log: Logger,
  ) {}

  get state(): FollowerState {
    return this.status;
  }

  /** Checks now, then every `everyMs`. */
  start(everyMs: number): Promise<void> {
    const first = this.check();
    this.timer = setInterval(() => void this.check(), everyMs);
    this.timer.unref();
    return first;
  }

  stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    return this.running ?? Promise.resolve();
  }

  /** One poll (a poll already running is waited for, not doubled). */
  check(): Promise<void> {
    this.running ??= this.follow().finally(() => (this.running = null));
    return this.running;
  }

  private async follow(): Promise<void> {
    const work = path.join(buildsDir(this.dataDir), `.replica.${process.pid}.${crypto.randomBytes(4).toString('hex')}`);
    try {
      makeDirectory(work);
      const pointerFile = path.join(work, 'CURRENT.json');
      if (!(await this.store.fetch(POINTER_KEY, pointerFile))) {
        this.status = { published: null, checkedAt: new Date(), error: 'nothing published yet' };
        return;
      }
      const pointer = parsePointer(fs.readFileSync(pointerFile, 'utf8'));
      this.status = { published: pointer.build, checkedAt: new Date(), error: this.status.error };
      if (readCurrentBuildId(this.dataDir) === pointer.build) {
        this.status = { ...this.status, error: null };
        return;
      }
      const tag = `${pointer.build}:${pointer.sha256}`;
      if (this.rejected === tag) return;
      if (!fs.existsSync(path.join(buildDir(this.dataDir, pointer.build), INDEX_FILE))) await this.download(pointer, work);
      else await this.verify(pointer, buildDir(this.dataDir, pointer.build));
      makeServing(this.dataDir, pointer.build);
      this.status = { ...this.status, error: null };
      this.log.info('replica: build fetched and made current', { build: pointer.build, bytes: pointer.bytes });
      this.prune(pointer.build);
    } catch (e) {
      const reason = reasonOf(e);
      if (e instanceof ReplicaRejected) this.rejected = e.tag;
      this.status = { ...this.status, checkedAt: new Date(), error: reason };
      this.log.error('replica: the serving build is unchanged', { reason });
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }

  /** Downloads the build into `work`, checks it, and renames it into builds/. */
  private async download(pointer: ReplicaPointer, work: string): Promise<void> {
    const dir = path.join(work, pointer.build);
    fs.mkdirSync(dir);
    for (const file of [MANIFEST_FILE, INDEX_FILE]) {
      if (!(await this.store.fetch(`index/${pointer.build}/${file}`, path.join(dir, file)))) {
        throw new Error(`index/${pointer.build}/${file} is missing from the store`);
      }
    }
    await this.verify(pointer, dir);
    fs.renameSync(dir, buildDir(this.dataDir, pointer.build));
  }

  private async verify(pointer: ReplicaPointer, dir: string): Promise<void> {
    const tag = `${pointer.build}:${pointer.sha256}`;
    let manifest: BuildManifest;
    try {
      manifest = readManifest(path.join(dir, MANIFEST_FILE));
    } catch (e) {
      throw new ReplicaRejected(tag, `build ${pointer.build}: its manifest does not read (${reasonOf(e)})`);
    }
    if (manifest.index.sha256 !== pointer.sha256) throw new ReplicaRejected(tag, `build ${pointer.build}: its manifest and the pointer name different digests`);
    try {
      await loadIndexFile(path.join(dir, INDEX_FILE), pointer.sha256);
    } catch (e) {
      throw new ReplicaRejected(tag, `build ${pointer.build} does not verify (${reasonOf(e)})`);
    }
  }

  /** Deletes fetched builds older than the last KEEP_BUILDS. */
  private prune(current: string): void {
    const all = listBuilds(this.dataDir).filter((id) => id !== current);
    for (const id of all.slice(0, Math.max(0, all.length - (KEEP_BUILDS - 1)))) {
      fs.rmSync(buildDir(this.dataDir, id), { recursive: true, force: true });
    }
  }
}

/** A fetched build that failed its check (by build and digest). */
class ReplicaRejected extends IpsiftError {
  constructor(
    readonly tag: string,
    message: string,
  ) {
    super('REPLICA_REJECTED', message);
  }
}
