/**
 * Escape class: metadata changes outside the write scope (issue 13 item 8). Landlock does not
 * cover chmod/chown/utime/xattr: a learned script turned `.ratchet/secrets` from 0600 to 0644.
 * A Python and a JS script try chmod, utime and chown on the secrets file (path-based and through
 * an open descriptor); the mode, owner and times must not change, and inside the output folder the
 * same calls must still work.
 *
 * Enforced by `ratchet-confine` v2 (metadata feature): fails against the v1 binary.
 */
import { chmodSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, type TestWorkspace } from "../helpers/cli.js";
import { attackWorkflow, found, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-meta-");
});
afterAll(() => ws?.remove());

const PY = `import json
import os

target = os.environ["VAR_TARGET"]
out_dir = os.environ["STEP_OUTPUT_DIR"]
mine = os.path.join(out_dir, "mine.txt")
with open(mine, "w") as f:
    f.write("x")
res = {}


def attempt(name, fn):
    try:
        fn()
        res[name] = "done"
    except OSError as e:
        res[name] = "refused: " + (e.strerror or "")


attempt("chmod", lambda: os.chmod(target, 0o644))
attempt("utime", lambda: os.utime(target, (1, 1)))
attempt("chown", lambda: os.chown(target, 1, 1))


def fd_chmod():
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fchmod(fd, 0o666)
    finally:
        os.close(fd)


def fd_chmod_path():
    fd = os.open(target, os.O_PATH)
    try:
        os.chmod("/".join(["", "proc", "self", "fd", str(fd)]), 0o664)
    finally:
        os.close(fd)


attempt("fchmod", fd_chmod)
attempt("o_path", fd_chmod_path)
attempt("own_chmod", lambda: os.chmod(mine, 0o600))
with open(os.path.join(out_dir, "found.json"), "w") as f:
    json.dump(res, f)
`;

const JS = `import { chmodSync, chownSync, closeSync, fchmodSync, openSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// The target arrives as a parameter: static review cannot follow it, only the sandbox stops it.
function main(target, outDir) {
  const mine = join(outDir, "mine.txt");
  writeFileSync(mine, "x");
  const res = {};
  const attempt = (name, fn) => {
    try {
      fn();
      res[name] = "done";
    } catch (e) {
      res[name] = "refused: " + e.code;
    }
  };
  attempt("chmod", () => chmodSync(target, 0o644));
  attempt("utime", () => utimesSync(target, 1, 1));
  attempt("chown", () => chownSync(target, 1, 1));
  attempt("fchmod", () => {
    const fd = openSync(target, "r");
    try {
      fchmodSync(fd, 0o666);
    } finally {
      closeSync(fd);
    }
  });
  attempt("own_chmod", () => chmodSync(mine, 0o600));
  return res;
}
const out = process.env.STEP_OUTPUT_DIR;
writeFileSync(join(out, "found.json"), JSON.stringify(main(process.env.VAR_TARGET, out)));
`;

describe("metadata outside the write roots", () => {
  it.each([
    ["Python", "main.py" as const, PY],
    ["JS", "main.mjs" as const, JS],
  ])(
    "chmod, utime, chown of .ratchet/secrets fail from a %s script; the file keeps 0600",
    async (lang, file, code) => {
      const secrets = join(ws.ratchetDir, "secrets");
      writeFileSync(secrets, "API_TOKEN=metadata-test-0123456789\n");
      chmodSync(secrets, 0o600);
      const before = statSync(secrets);
      const wf = attackWorkflow(ws, `meta-${lang.toLowerCase()}`, [{ id: "meta", file, code }], ["target"]);
      const r = await ws.run(["run", wf, "--json", "--var", `target=${secrets}`]);
      const run = runJson(r);
      expect(
        run.steps.map((s) => s.outcome),
        r.stderr,
      ).toEqual(["passed"]);
      const after = statSync(secrets);
      expect((after.mode & 0o777).toString(8)).toBe("600");
      expect(after.uid).toBe(before.uid);
      expect(after.gid).toBe(before.gid);
      expect(after.mtimeMs).toBe(before.mtimeMs);
      const got = found<Record<string, string>>(wf, run.run_id, "meta");
      for (const [call, outcome] of Object.entries(got)) {
        if (call === "own_chmod") expect(outcome, `${lang} ${call}`).toBe("done");
        else expect(outcome, `${lang} ${call}`).toMatch(/^refused/);
      }
    },
  );
});
