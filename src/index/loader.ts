// Loads a build's index into shared memory and keeps the serving one current.
//
// One copy per process: the file is read once into a SharedArrayBuffer that the front end
// and every batch worker view directly. A new build is loaded beside the old one and swapped
// in with one assignment; requests already holding the old index finish on it.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { listBuilds, makeServing, readCurrentBuildId } from './builds.js';
import { IpsiftError, reasonOf } from '../errors.js';
import type { Logger } from '../log.js';
import { RangeIndex } from './range-index.js';
import { INDEX_FILE, MANIFEST_FILE, buildDir, currentPointerFile } from '../data-dir.js';

export interface ServingIndex {
  /** Increases with every swap; workers re-wrap the shared memory when it changes. */
  readonly generation: number;
  readonly buildId: string;
  readonly shared: SharedArrayBuffer;
  readonly index: RangeIndex;
  readonly loadedAt: Date;
  /** When the build was made (its manifest's `created`), where the holder read it. */
  readonly builtAt?: Date;
}

/** Where the lookup routes find the serving index (an IndexHolder, or a front-end thread's view of one). */
export interface IndexSource {
  readonly current: ServingIndex | null;
}

/** Reads the file into a new SharedArrayBuffer, checks its digest and structure. */
export async function loadIndexFile(file: string, expectedSha256?: string): Promise<{ shared: SharedArrayBuffer; index: RangeIndex }> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const { size } = await handle.stat();
    const shared = new SharedArrayBuffer(size);
    const bytes = new Uint8Array(shared);
    const hash = crypto.createHash('sha256');
    const chunk = 8 << 20;
    for (let at = 0; at < size; ) {
      const { bytesRead } = await handle.read(bytes, at, Math.min(chunk, size - at), at);
      if (bytesRead === 0) throw new Error(`index file ended early at byte ${at}`);
      hash.update(bytes.subarray(at, at + bytesRead));
      at += bytesRead;
    }
    if (expectedSha256 && hash.digest('hex') !== expectedSha256) throw new Error('index file does not match its manifest digest');
    return { shared, index: new RangeIndex(bytes) };
  } finally {
    await handle.close();
  }
}

/** A build is made serving only if its index matches its manifest and reads as an index. */
export async function verifyBuild(dataDir: string, id: string): Promise<void> {
  const dir = buildDir(dataDir, id);
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, MANIFEST_FILE), 'utf8')) as { index: { sha256: string } };
    await loadIndexFile(path.join(dir, INDEX_FILE), manifest.index.sha256);
  } catch (e) {
    throw new IpsiftError('BUILD_DAMAGED', `build ${id} is damaged (${reasonOf(e)}); the serving build is unchanged`, { cause: e });
  }
}

/** Makes an existing, verified build the serving one (running servers switch within INDEX_POLL_MS). */
export async function serveBuild(dataDir: string, id: string): Promise<void> {
  if (!listBuilds(dataDir).includes(id)) throw new IpsiftError('NO_BUILD', `no build ${id}`);
  await verifyBuild(dataDir, id);
  makeServing(dataDir, id);
}

export class IndexHolder implements IndexSource {
  private serving: ServingIndex | null = null;
  private generation = 0;
  private loading: Promise<void> | null = null;
  private reloadAgain = false;
  private watching = false;
  private readonly listeners: ((s: ServingIndex) => void)[] = [];

  constructor(
    private readonly dataDir: string,
    private readonly log: Logger,
  ) {}

  get current(): ServingIndex | null {
    return this.serving;
  }

  onSwap(listener: (s: ServingIndex) => void): void {
    this.listeners.push(listener);
  }

  /** Loads the build CURRENT names, if it is not the one serving. Never throws. */
  reload(): Promise<void> {
    if (this.loading) {
      this.reloadAgain = true;
      return this.loading;
    }
    this.loading = this.loadCurrent().finally(() => {
      this.loading = null;
      if (this.reloadAgain) {
        this.reloadAgain = false;
        void this.reload();
      }
    });
    return this.loading;
  }

  private async loadCurrent(): Promise<void> {
    const id = readCurrentBuildId(this.dataDir);
    if (id === null || id === this.serving?.buildId) return;
    const dir = buildDir(this.dataDir, id);
    const started = performance.now();
    try {
      const manifest = JSON.parse(await fs.promises.readFile(path.join(dir, MANIFEST_FILE), 'utf8')) as { index?: { sha256?: string }; created?: string };
      const { shared, index } = await loadIndexFile(path.join(dir, INDEX_FILE), manifest.index?.sha256);
      const builtAt = manifest.created ? new Date(manifest.created) : undefined;
      const next: ServingIndex = {
        generation: ++this.generation,
        buildId: id,
        shared,
        index,
        loadedAt: new Date(),
        ...(builtAt && !Number.isNaN(builtAt.getTime()) ? { builtAt } : {}),
      };
      const previous = this.serving?.buildId ?? null;
      this.serving = next;
      this.log.info('index loaded', {
        build: id,
        previous,
        generation: next.generation,
        bytes: shared.byteLength,
        v4_intervals: index.counts.v4,
        v6_intervals: index.counts.v6,
        records: index.counts.records,
        huge_pages_mib: hugePagesMiB(),
        ms: Math.round(performance.now() - started),
      });
      for (const l of this.listeners) l(next);
    } catch (e) {
      this.log.error('index load failed; keeping the serving index', {
        build: id,
        serving: this.serving?.buildId ?? null,
        reason: e instanceof Error ? e.message : String(e),
      });
    }
  }

  /** Follows CURRENT: polled (works on every file system), plus SIGHUP for an immediate look. */
  watch(intervalMs: number): void {
    if (this.watching) return;
    this.watching = true;
    fs.watchFile(currentPointerFile(this.dataDir), { interval: intervalMs, persistent: false }, () => void this.reload());
  }

  close(): void {
    if (this.watching) fs.unwatchFile(currentPointerFile(this.dataDir));
    this.watching = false;
  }
}

/**
 * MiB of this process on transparent huge pages (null where unknown): the index is
 * searched at random, and on 4 KiB pages nearly every probe also misses the TLB. With THP in
 * `madvise` mode glibc asks for huge pages only when GLIBC_TUNABLES has glibc.malloc.hugetlb=1
 * (npm start sets it).
 */
function hugePagesMiB(): number | null {
  try {
    const m = /^AnonHugePages:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/smaps_rollup', 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}
