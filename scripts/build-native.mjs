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

const source = "native/confine.c";
const target = "dist/native/ratchet-confine";
const next = `${target}.next-${process.pid}`;

if (process.platform !== "linux") process.exit(0);
if (existsSync(target) && statSync(target).mtimeMs >= statSync(source).mtimeMs) process.exit(0);
mkdirSync("dist/native", { recursive: true });
const cc = process.env.CC || "cc";
const common = ["-O2", "-Wall", "-Wextra", "-o", next, source];
let r = spawnSync(cc, ["-static", ...common], { encoding: "utf8" });
if (r.status !== 0) r = spawnSync(cc, common, { encoding: "utf8" });
if (r.status !== 0) {
  rmSync(next, { force: true });
  const why = r.error ? r.error.message : (r.stderr || "").trim().split("\n").slice(-3).join(" / ");
  console.warn(`ratchet-confine not built (${why}); Python scripts will use bubblewrap where available`);
  process.exit(0);
}
chmodSync(next, 0o755);
renameSync(next, target);
