/**
 * Attack: a confined script or runner command reads credentials outside its read roots
 * (/etc/shadow, the user's ~/.ssh/id_rsa). With `--read`, Landlock handles read rights, so only
 * what lies beneath a --read or --write root can be opened or executed.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultReads, launch, outcomes, python, scratch, skipReason } from "./native-kit.js";

const pythonAttack = `
import sys
for label, path in [("shadow", "/etc/shadow"), ("ssh", sys.argv[1]), ("own", sys.argv[2])]:
    try:
        open(path, "rb").read()
        print(label, "ok")
    except OSError as e:
        print(label, "refused", e.errno)
`;

const nodeAttack = `
const fs = require("node:fs");
for (const [label, path] of [["shadow", "/etc/shadow"], ["ssh", process.argv[2]], ["own", process.argv[3]]]) {
  try { fs.readFileSync(path); console.log(label, "ok"); } catch (e) { console.log(label, "refused", e.code); }
}
`;

describe.skipIf(skipReason !== undefined)("native: reads outside the read roots", () => {
  const s = scratch("ratchet-native-reads-");
  const home = join(s.dir, "home");
  const key = join(home, ".ssh", "id_rsa");
  const work = join(s.dir, "work");
  const out = join(s.dir, "out");
  beforeAll(() => {
    mkdirSync(join(home, ".ssh"), { recursive: true });
    writeFileSync(key, "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n");
    mkdirSync(work);
    mkdirSync(out);
    writeFileSync(join(work, "attack.py"), pythonAttack);
    writeFileSync(join(work, "attack.js"), nodeAttack);
    writeFileSync(join(work, "input.txt"), "declared input\n");
  });
  afterAll(() => s.remove());
  const flags = () => [...defaultReads(work), "--write", out, "--write-file", "/dev/null"];
  const env = () => ({ PATH: "/usr/bin:/bin", HOME: home });

  it.skipIf(!python)("Python cannot read /etc/shadow or ~/.ssh/id_rsa; its own inputs stay readable", () => {
    const r = launch(
      [...flags(), "--", python?.exe as string, "-B", join(work, "attack.py"), key, join(work, "input.txt")],
      {
        env: env(),
        cwd: work,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(outcomes(r.stdout)).toEqual({ shadow: "refused 13", ssh: "refused 13", own: "ok" });
  });

  it("Node cannot read them either", () => {
    const r = launch(
      [...flags(), "--", process.execPath, join(work, "attack.js"), key, join(work, "input.txt")],
      {
        env: env(),
        cwd: work,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(outcomes(r.stdout)).toEqual({ shadow: "refused EACCES", ssh: "refused EACCES", own: "ok" });
  });

  it("nor a shell command and what it starts (cat, a subshell)", () => {
    const script = `cat /etc/shadow >/dev/null 2>&1 && echo shadow ok || echo shadow refused
bash -c 'cat "$0" >/dev/null 2>&1 && echo ssh ok || echo ssh refused' ${JSON.stringify(key)}
cat input.txt >/dev/null && echo own ok`;
    const r = launch([...flags(), "--", "/bin/bash", "-c", script], { env: env(), cwd: work });
    expect(r.status, r.stderr).toBe(0);
    expect(outcomes(r.stdout)).toEqual({ shadow: "refused", ssh: "refused", own: "ok" });
  });

  it("a program outside the read roots cannot even be executed", () => {
    const tool = join(s.dir, "tool.sh");
    writeFileSync(tool, "#!/bin/sh\necho ran\n", { mode: 0o755 });
    const r = launch([...flags(), "--", tool], { env: env(), cwd: work });
    expect(r.status).toBe(127);
    expect(r.stderr).toMatch(/^ratchet-confine: cannot run .*Permission denied/);
  });

  it("without --read, reads stay open as in v1 (only /proc of other processes is closed)", () => {
    const r = launch(
      [
        "--write",
        out,
        "--write-file",
        "/dev/null",
        "--",
        "/bin/bash",
        "-c",
        `cat ${JSON.stringify(key)} >/dev/null && echo ssh ok`,
      ],
      {
        env: env(),
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("ssh ok");
  });
});
