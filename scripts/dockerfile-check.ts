// Replays the Dockerfile on this machine, where `docker build` cannot run: each stage gets a
// directory standing for its filesystem root; COPY copies from the build context (less what
// .dockerignore leaves out) or from an earlier stage; RUN runs with the stage's WORKDIR and
// ENV; absolute paths in RUN and ENV are moved under the stage's root; `chown` to the image's
// user is skipped (this machine has no such user). Then the final stage's ENTRYPOINT and CMD
// start with its ENV on the ports it EXPOSEs, and the check asks what a container run would:
// readiness, a lookup, the HEALTHCHECK command, a clean exit on STOPSIGNAL, the data on the
// VOLUME, and no development dependency in the image. The platform must match the image's
// (Node 24 on Debian 13, glibc 2.41: `.ci/in-trixie "$NODE24/node" npm run check:dockerfile`),
// or the replay would prove nothing about the uWS binary.
//
//   npm run check:dockerfile

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { untilListening, type Listening } from './listening.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Stage {
  name: string;
  image: string;
  root: string;
  workdir: string;
  env: Record<string, string>;
}

export interface ImageRun {
  entrypoint: string[];
  cmd: string[];
  env: Record<string, string>;
  cwd: string;
  root: string;
  exposed: number[];
  volumes: string[];
  healthcheck: string[] | null;
  stopSignal: NodeJS.Signals;
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
export function instructions(text: string): { op: string; args: string }[] {
  const out: { op: string; args: string }[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const whole = (pending + line).trim();
    pending = '';
    const sp = whole.indexOf(' ');
    out.push({ op: whole.slice(0, sp).toUpperCase(), args: whole.slice(sp + 1).trim() });
  }
  return out;
}

/** .dockerignore as a test: whether a context path (relative, '/'-separated) is left out. */
function ignoreRules(): (rel: string) => boolean {
  const file = path.join(ROOT, '.dockerignore');
  const rules = fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith('#'))
    : [];
  const toRegex = (p: string): RegExp => new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/.*)?$`);
  const compiled = rules.map((r) => ({ negate: r.startsWith('!'), re: toRegex(r.replace(/^!/, '')) }));
  return (rel) => {
    let ignored = false;
    for (const r of compiled) if (r.re.test(rel)) ignored = !r.negate;
    return ignored;
  };
}

function copyTree(from: string, to: string, skip: (abs: string) => boolean): void {
  if (skip(from)) return;
  const st = fs.statSync(from);
  if (st.isDirectory()) {
    fs.mkdirSync(to, { recursive: true });
    for (const name of fs.readdirSync(from)) copyTree(path.join(from, name), path.join(to, name), skip);
  } else {
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(from, to);
  }
}

/** An exec-form (JSON array) or shell-form argument list. */
function argv(args: string): string[] {
  return args.startsWith('[') ? (JSON.parse(args) as string[]) : ['/bin/sh', '-c', args];
}

/** Absolute paths under the stage's root (system directories stay the host's). */
function rerooted(text: string, root: string): string {
  return text.replace(
    // System paths stay as they are, but /usr/local, which the image's own steps write to.
    /(^|[\s=:])(\/(?!usr\/(?!local\/)|bin\/|etc\/|dev\/|proc\/|tmp\/)[A-Za-z0-9._-][A-Za-z0-9._/-]*)/g,
    (_, pre: string, p: string) => `${pre}${root}${p}`,
  );
}

/** Builds every stage; returns how the final one would run. */
export function build(workRoot: string, log: (line: string) => void = () => {}): ImageRun {
  const text = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const ignored = ignoreRules();
  const stages: Stage[] = [];
  let s: Stage | null = null;
  const run: Partial<ImageRun> & { exposed: number[]; volumes: string[] } = { exposed: [], volumes: [] };
  for (const { op, args } of instructions(text)) {
    if (op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!m) throw new Error(`FROM ${args}: not understood`);
      s = { name: m[2] ?? String(stages.length), image: m[1], root: path.join(workRoot, `stage-${stages.length}`), workdir: '/', env: {} };
      fs.mkdirSync(s.root, { recursive: true });
      stages.push(s);
      Object.assign(run, { entrypoint: [], cmd: [], healthcheck: null, stopSignal: 'SIGTERM', exposed: [], volumes: [] });
      log(`FROM ${m[1]}`);
      continue;
    }
    if (s === null) throw new Error(`${op} before FROM`);
    const stage: Stage = s;
    const inRoot = (p: string): string => path.join(stage.root, path.posix.isAbsolute(p) ? p : path.posix.join(stage.workdir, p));
    switch (op) {
      case 'WORKDIR':
        stage.workdir = path.posix.resolve(stage.workdir, args);
        fs.mkdirSync(inRoot('.'), { recursive: true });
        break;
      case 'ENV':
        for (const m of args.matchAll(/([A-Z0-9_]+)=("[^"]*"|\S+)/g)) stage.env[m[1]] = m[2].replace(/^"|"$/g, '');
        break;
      case 'COPY': {
        const parts = args.split(/\s+/);
        const from = parts[0].startsWith('--from=') ? parts.shift()!.slice('--from='.length) : null;
        const dest = parts.pop()!;
        const source = from === null ? null : stages.find((x) => x.name === from);
        if (from !== null && !source) throw new Error(`COPY --from=${from}: no such stage`);
        for (const src of parts) {
          const abs = source ? path.join(source.root, path.posix.isAbsolute(src) ? src : path.posix.join(source.workdir, src)) : path.join(ROOT, src);
          if (!fs.existsSync(abs)) throw new Error(`COPY ${src}: not in the ${source ? `stage ${from}` : 'build context'}`);
          const target = dest.endsWith('/') && !fs.statSync(abs).isDirectory() ? path.join(inRoot(dest), path.basename(src)) : inRoot(dest);
          const skip = (p: string): boolean => source === null && ignored(path.relative(ROOT, p).split(path.sep).join('/'));
          copyTree(abs, target, skip);
        }
        log(`COPY ${args}`);
        break;
      }
      case 'RUN': {
        // No image user on this machine: ownership is the one step that cannot be replayed.
        const cmd = rerooted(args, stage.root).replace(/chown\s+\S+\s+\S+/g, 'true');
        log(`RUN ${args}`);
        const r = spawnSync('/bin/sh', ['-c', cmd], {
          cwd: inRoot('.'),
          env: { ...process.env, ...stage.env },
          stdio: ['ignore', 'pipe', 'pipe'],
          encoding: 'utf8',
        });
        if (r.status !== 0) throw new Error(`RUN ${args}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
        break;
      }
      case 'EXPOSE':
        run.exposed.push(...args.split(/\s+/).map((p) => Number(p.replace(/\/tcp$/, ''))));
        break;
      case 'VOLUME':
        run.volumes.push(...argv(args.startsWith('[') ? args : JSON.stringify(args.split(/\s+/))));
        break;
      case 'ENTRYPOINT':
        run.entrypoint = argv(args);
        break;
      case 'CMD':
        run.cmd = argv(args);
        break;
      case 'HEALTHCHECK': {
        const m = /CMD\s+(.*)$/.exec(args);
        run.healthcheck = m ? argv(m[1]) : null;
        break;
      }
      case 'STOPSIGNAL':
        run.stopSignal = args as NodeJS.Signals;
        break;
      case 'USER':
      case 'LABEL':
        break;
      default:
        throw new Error(`${op}: not replayed by this check`);
    }
  }
  if (s === null) throw new Error('no FROM');
  const last: Stage = s;
  const env = Object.fromEntries(Object.entries(last.env).map(([k, v]) => [k, rerooted(v, last.root)]));
  return { ...(run as ImageRun), env, cwd: path.join(last.root, last.workdir), root: last.root };
}

/** The images this check knows: Node's major and Debian's glibc. */
const IMAGES: readonly { re: RegExp; node: string; glibc: string; where: string }[] = [
  { re: /^node:24-trixie/, node: '24', glibc: '2.41', where: 'the Debian 13 root of .ci/in-trixie' },
  { re: /^node:20-bookworm/, node: '20', glibc: '2.36', where: 'Debian 12' },
];

/** Whether this runtime is the image's platform (null), or why not: the replay would prove nothing about the uWS binary elsewhere. */
export function platformMatches(image: string): string | null {
  const known = IMAGES.find((i) => i.re.test(image));
  if (!known) return `the image is ${image}, which this check does not know`;
  const here = process.versions.bun ? `Bun ${process.versions.bun}` : `Node ${process.versions.node}`;
  if (process.versions.bun || process.versions.node.split('.')[0] !== known.node)
    return `this runtime is ${here}, the image's is Node ${known.node} (run it in ${known.where})`;
  const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime;
  if (glibc !== known.glibc) return `glibc here is ${glibc}, the image's is ${known.glibc} (run it in ${known.where})`;
  return null;
}

/** The image's first stage name, for platformMatches. */
export function finalImage(): string {
  const froms = instructions(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')).filter((i) => i.op === 'FROM');
  return froms[froms.length - 1].args.split(/\s+/)[0];
}

/**
 * Starts the built image's command; resolves once it logs that it listens. A container has a
 * network of its own, where the exposed ports are always free; the replay shares the host's,
 * so `ephemeral` stands for `docker run -p 0:8080 -p 0:8081`: the ports are the kernel's
 * choice (PORT=0, ADMIN_PORT=0), and healthCheck() points the HEALTHCHECK at the real one.
 */
export async function start(img: ImageRun, ports: 'exposed' | 'ephemeral' = 'exposed'): Promise<Listening & { stop(): Promise<number | null> }> {
  const [cmd, ...args] = [...img.entrypoint, ...img.cmd];
  const mapped = ports === 'ephemeral' ? { PORT: '0', ADMIN_PORT: '0' } : {};
  const child = spawn(cmd, args, { cwd: img.cwd, env: { PATH: process.env.PATH, HOME: img.root, ...img.env, ...mapped } });
  const l = await untilListening(child);
  const stop = (): Promise<number | null> =>
    new Promise((done) => {
      child.once('exit', (code) => done(code));
      child.kill(img.stopSignal);
    });
  return { ...l, stop };
}

/** The HEALTHCHECK command with the image's admin port (EXPOSEd second) mapped to `adminPort`. */
export function healthCheck(img: ImageRun, adminPort: number): string[] {
  const exposed = `:${img.exposed[1]}/`;
  return img.healthcheck!.map((a) => a.split(exposed).join(`:${adminPort}/`));
}

async function main(): Promise<void> {
  const why = platformMatches(finalImage());
  if (why) throw new Error(`cannot replay the Dockerfile here: ${why}`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-image-'));
  try {
    const img = build(work, (l) => process.stdout.write(`${l}\n`));
    const s = await start(img, 'ephemeral');
    process.stdout.write(`listening on ${s.port}, admin ${s.adminPort}; readyz ${(await fetch(`http://127.0.0.1:${s.adminPort}/readyz`)).status}\n`);
    process.stdout.write(`exit ${await s.stop()} on ${img.stopSignal}\n(test/packaging.test.ts checks the rest: health check, volume, dev dependencies)\n`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
