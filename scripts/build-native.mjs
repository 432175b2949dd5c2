// Builds dist/native/ratchet-confine from native/confine.c: the launcher that confines untrusted
// scripts and runner commands (Landlock reads/writes and /proc, a read-only mount namespace for
// metadata, signal scope, seccomp) and supervises every command, trusted ones too (time-out, no
// process left behind, cleanup); its header comment is the reference. Linked statically when the
// C library allows it (an exec of a static binary skips the dynamic loader); built next to the
// live binary and renamed over it, so a run that is starting a script never sees half a file.
// Without a C compiler, or on an architecture the launcher does not know, nothing is built:
// Python scripts then run under bubblewrap where it works (`ratchet doctor`).
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";

if (process.platform !== "linux") process.exit(0);

/** Compiles `source` into `target` unless it is up to date; returns whether the binary exists. */
function buildBinary(source, target, what) {
  const next = `${target}.next-${process.pid}`;
  if (existsSync(target) && statSync(target).mtimeMs >= statSync(source).mtimeMs) return true;
  mkdirSync("dist/native", { recursive: true });
  const cc = process.env.CC || "cc";
  const common = ["-O2", "-Wall", "-Wextra", "-o", next, source];
  let r = spawnSync(cc, ["-static", ...common], { encoding: "utf8" });
  if (r.status !== 0) r = spawnSync(cc, common, { encoding: "utf8" });
  if (r.status !== 0) {
    rmSync(next, { force: true });
    // An older binary must not stay behind: it would keep running code its source no longer has.
    rmSync(target, { force: true });
    const why = r.error ? r.error.message : (r.stderr || "").trim().split("\n").slice(-3).join(" / ");
    console.warn(`${target} not built (${why}); ${what}`);
    return false;
  }
  chmodSync(next, 0o755);
  renameSync(next, target);
  return true;
}

buildBinary(
  "native/confine.c",
  "dist/native/ratchet-confine",
  "Python scripts will use bubblewrap where available",
);
// The native client of the workspace daemon (docs/daemon.md): bin/ratchet runs it first, so a
// ledger write from a shell costs no Node start-up when a daemon serves the workspace.
buildBinary("native/client.c", "dist/native/ratchet-client", "bin/ratchet runs node bin/ratchet.js directly");
// The resident spawner of the process runner (src/exec/ARCHITECTURE.md, "The spawner"): every
// process Ratchet starts is started by it, so a start costs the same whatever Node's size.
buildBinary("native/spawner.c", "dist/native/ratchet-spawner", "processes are started by Node itself");
