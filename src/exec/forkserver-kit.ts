/**
 * Test support for the forkserver's conformance and escape suites: one real confinement (the
 * built `ratchet-confine`, the real interpreter), and the same script started both ways — a plain
 * start through the door, and a run in a {@link Forkserver} started through the door with the same
 * confinement.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Confinement,
  compileConfinement,
  type Launcher,
  parseProbe,
  Supervise,
  settleLaunched,
} from "./door.js";
import { confinementKey, Forkserver, forkserverConfinement } from "./forkserver.js";
import { resolvePython } from "./interpreters.js";
import { realProcessRunner } from "./process-runner.js";
import { readRoots } from "./read-roots.js";
import { findConfine } from "./sandbox.js";
import type { RunResult } from "./types.js";

export interface ForkKit {
  ws: string;
  codeDir: string;
  outDir: string;
  /** A file outside every read root. */
  secret: string;
  confinement: Confinement;
  python: string;
  plain(script: string, args?: string[], file?: string): Promise<RunResult>;
  fork(script: string, args?: string[], file?: string): Promise<RunResult>;
  server(): Promise<Forkserver>;
  /** Another server of the same confinement (two runs at once: one server runs one at a time). */
  otherServer(): Promise<Forkserver>;
  /**
   * Runs `script` (written to `file` in `codeDir`, default `main.py`) in `server`; with `confine`
   * the run's child also narrows itself to the confinement's own roots (as learned steps do).
   */
  runIn(
    server: Forkserver,
    script: string,
    args?: string[],
    file?: string,
    confine?: boolean,
  ): Promise<RunResult>;
  close(): Promise<void>;
}

/** Why the suites cannot run here (no built launcher, no python3), or undefined. */
export async function forkKit(): Promise<ForkKit | string> {
  const confine = findConfine();
  if (!confine) return "ratchet-confine is not built (npm run build)";
  const py = await resolvePython(process.env);
  if (!py) return "no python3";
  const probe = await realProcessRunner.run({ command: confine, args: ["--probe"], timeoutMs: 10_000 });
  const features = parseProbe(probe.stdout);
  if (probe.exitCode !== 0 || !features || features.abi < 6)
    return `the launcher cannot confine here: ${probe.stderr}`;
  const launcher: Launcher = { kind: "ratchet-confine", path: confine, features };
  const ws = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-fskit-")));
  const codeDir = join(ws, "code");
  const outDir = join(ws, "out");
  mkdirSync(codeDir);
  mkdirSync(outDir);
  const secret = join(ws, "secret.txt");
  writeFileSync(secret, "s3cret\n");
  const env = {
    PATH: `/usr/bin:/bin`,
    LANG: "C.UTF-8",
    STEP_OUTPUT_DIR: outDir,
    STEP_EXECUTION_DIR: codeDir,
    VAR_X: "x y",
  };
  const confinement: Confinement = {
    readRoots: [
      codeDir,
      ...readRoots({
        interpreters: py.roots,
        own: [codeDir],
        extra: [],
        forbid: { home: process.env.HOME, secretDirs: [] },
      }),
    ],
    writeRoots: [outDir],
    writeFiles: ["/dev/null"],
    env,
    timeoutMs: 20_000,
    killGraceMs: 500,
    supervise: Supervise.Confine,
    cleanup: [],
  };
  const door = compileConfinement(confinement, launcher);
  const started: Promise<Forkserver>[] = [];
  const startServer = (): Promise<Forkserver> => {
    const s = Forkserver.start({
      door: compileConfinement(forkserverConfinement(confinement), launcher),
      interpreter: py.executable,
      cwd: codeDir,
      key: confinementKey(confinement, py.executable),
    }).then((s) => {
      if (!(s instanceof Forkserver)) throw new Error(`forkserver did not start: ${s.fallback}`);
      return s;
    });
    started.push(s);
    return s;
  };
  let server: Promise<Forkserver> | undefined;
  let other: Promise<Forkserver> | undefined;
  const getServer = (): Promise<Forkserver> => {
    server ??= startServer();
    return server;
  };
  const runIn = (
    s: Forkserver,
    script: string,
    args: string[] = [],
    file = "main.py",
    confine = false,
  ): Promise<RunResult> => {
    writeFileSync(join(codeDir, file), script);
    const roots = {
      reads: confinement.readRoots,
      writes: confinement.writeRoots,
      files: confinement.writeFiles,
    };
    return s.run({
      argv: [file, ...args],
      cwd: codeDir,
      env,
      timeoutMs: confinement.timeoutMs,
      killGraceMs: confinement.killGraceMs,
      maxCaptureBytes: 1 << 20,
      ...(confine ? { confine: roots } : {}),
    });
  };
  return {
    ws,
    codeDir,
    outDir,
    secret,
    confinement,
    python: py.executable,
    async plain(script, args = [], file = "main.py") {
      writeFileSync(join(codeDir, file), script);
      const cmd = door.command(py.executable, ["-B", file, ...args]);
      const r = await realProcessRunner.run({
        command: cmd.command,
        args: cmd.args,
        cwd: codeDir,
        env,
        timeoutMs: door.runnerTimeoutMs,
        maxCaptureBytes: 1 << 20,
      });
      return settleLaunched(door, r);
    },
    async fork(script, args = [], file = "main.py") {
      return runIn(await getServer(), script, args, file);
    },
    server: getServer,
    otherServer() {
      other ??= startServer();
      return other;
    },
    runIn,
    async close() {
      for (const s of started) await (await s).close();
    },
  };
}
