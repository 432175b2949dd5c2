/**
 * Shared pieces of the `native-*` escape tests: they drive the built launcher
 * (`dist/native/ratchet-confine`) directly with real interpreters, no Ratchet code in between.
 */
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The built launcher, or undefined (then every native test skips, saying why). */
export const confine: string | undefined = (() => {
  const p = join(root, "dist", "native", "ratchet-confine");
  return process.platform === "linux" && existsSync(p) ? p : undefined;
})();

/** What `--probe` reports: the Landlock ABI and each `feature NAME yes|no` line. */
export interface Probe {
  abi: number;
  features: Record<string, boolean>;
}

function runProbe(env: NodeJS.ProcessEnv = process.env): Probe | undefined {
  if (!confine) return undefined;
  const r = spawnSync(confine, ["--probe"], { encoding: "utf8", env });
  const abi = /landlock abi (\d+)/.exec(r.stdout);
  if (r.status !== 0 || !abi) return undefined;
  const features: Record<string, boolean> = {};
  for (const m of r.stdout.matchAll(/^feature (\w+) (yes|no)/gm)) features[m[1] as string] = m[2] === "yes";
  return { abi: Number(abi[1]), features };
}

export const probe = runProbe();
/** The probe where namespaces are switched off: the documented fallback, testable on any machine. */
export const fallbackEnv = { ...process.env, RATCHET_CONFINE_NO_NAMESPACES: "1" };
export const fallbackProbe = runProbe(fallbackEnv);

/** Why the native tests cannot run here, or undefined when they can. */
export const skipReason: string | undefined = !confine
  ? "dist/native/ratchet-confine is not built (npm run build needs a C compiler on Linux)"
  : !probe
    ? "the kernel has no usable Landlock (ratchet-confine --probe failed)"
    : undefined;
if (skipReason) console.warn(`native escape tests skipped: ${skipReason}`);

/**
 * The real Python interpreter (not a version-manager shim: a shim is a script that execs another
 * program, which a read set must then also cover) and its installation prefix.
 */
export const python: { exe: string; prefix: string } | undefined = (() => {
  for (const candidate of ["/usr/bin/python3", "python3"]) {
    const r = spawnSync(candidate, ["-c", "import sys; print(sys.executable); print(sys.base_prefix)"], {
      encoding: "utf8",
    });
    if (r.status !== 0) continue;
    const [exe, prefix] = r.stdout.trim().split("\n") as [string, string];
    return { exe: realpathSync(exe), prefix };
  }
  return undefined;
})();

/** The interpreter's own prefix for Node (`process.execPath` is the real binary). */
export const nodePrefix = dirname(dirname(realpathSync(process.execPath)));

/**
 * The read set the header of native/confine.c documents for Python, Node and runner commands:
 * system libraries and binaries, the few /etc files they open, the interpreters' prefixes.
 */
export function defaultReads(...extra: string[]): string[] {
  const reads = [
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/sbin",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/dev/null",
    "/dev/urandom",
    "/dev/zero",
    nodePrefix,
    ...(python ? [python.prefix] : []),
    ...extra,
  ];
  return [...new Set(reads)].flatMap((p) => ["--read", p]);
}

/** Runs the launcher with `args` (flags, `--`, command) and returns its result as text. */
export function launch(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): SpawnSyncReturns<string> {
  return spawnSync(confine as string, args, {
    encoding: "utf8",
    env: opts.env ?? process.env,
    cwd: opts.cwd,
    timeout: 60_000,
  });
}

/** A fresh folder under the system temp folder, removed by the returned function. */
export function scratch(prefix: string): { dir: string; remove: () => void } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Polls `check` every 20 ms until it holds or `ms` passed; returns whether it held. */
export async function eventually(check: () => boolean, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

/** Parses `label result` lines that the attack scripts print. */
export function outcomes(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.split("\n")) {
    const m = /^(\S+) (.*)$/.exec(line.trim());
    if (m) out[m[1] as string] = m[2] as string;
  }
  return out;
}
