/**
 * Attack: a confined script changes metadata outside its write roots (chmod of .ratchet/secrets
 * 600 -> 644, chown, utime, setxattr), path-based and through a descriptor it opened read-only.
 * Landlock does not cover these calls. Where a mount namespace is permitted (root, or an
 * unprivileged user namespace), / is read-only in it except fresh writable binds of the write
 * roots, so they fail with EROFS outside and work inside. Where it is not, seccomp refuses every
 * metadata call with EPERM (inside the write roots too) and --probe says `feature metadata no`.
 */
import { chmodSync, mkdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import {
  fallbackEnv,
  fallbackProbe,
  launch,
  outcomes,
  probe,
  python,
  scratch,
  skipReason,
} from "./native-kit.js";

const attack = `
import os, sys
def attempt(label, fn):
    try:
        fn()
        print(label, "ok")
    except OSError as e:
        print(label, "refused", e.errno)
def fchmod(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fchmod(fd, 0o644)
    finally:
        os.close(fd)
def futime(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.utime(fd, (0, 0))
    finally:
        os.close(fd)
for where, path in [("out", sys.argv[1]), ("in", sys.argv[2])]:
    attempt(where + "-chmod", lambda: os.chmod(path, 0o644))
    attempt(where + "-fchmod", lambda: fchmod(path))
    attempt(where + "-chmodat", lambda: os.chmod(os.path.basename(path), 0o644, dir_fd=os.open(os.path.dirname(path), os.O_RDONLY)))
    attempt(where + "-chown", lambda: os.chown(path, os.getuid(), os.getgid()))
    attempt(where + "-utime", lambda: os.utime(path, (0, 0)))
    attempt(where + "-futime", lambda: futime(path))
    attempt(where + "-setxattr", lambda: os.setxattr(path, "user.ratchet", b"x"))
    attempt(where + "-removexattr", lambda: os.removexattr(path, "user.ratchet"))
attempt("in-rename", lambda: os.rename(sys.argv[2], sys.argv[2] + ".moved"))
attempt("in-write", lambda: open(sys.argv[2] + ".new", "w").write("x"))
attempt("devnull", lambda: open(os.devnull, "w").write("x"))
`;

const calls = ["chmod", "fchmod", "chmodat", "chown", "utime", "futime", "setxattr", "removexattr"];

describe.skipIf(skipReason !== undefined || !python)("native: metadata outside the write roots", () => {
  const s = scratch("ratchet-native-metadata-");
  const secrets = join(s.dir, "dot-ratchet", "secrets");
  const out = join(s.dir, "out");
  const inside = join(out, "result.json");
  afterAll(() => s.remove());
  beforeEach(() => {
    mkdirSync(join(s.dir, "dot-ratchet"), { recursive: true });
    mkdirSync(out, { recursive: true });
    writeFileSync(secrets, "API_KEY=x\n", { mode: 0o600 });
    chmodSync(secrets, 0o600);
    utimesSync(secrets, 1_000_000, 1_000_000);
    writeFileSync(inside, "{}");
    writeFileSync(join(s.dir, "attack.py"), attack);
  });
  const run = (env: NodeJS.ProcessEnv) =>
    launch(
      [
        "--write",
        out,
        "--write-file",
        "/dev/null",
        "--",
        python?.exe as string,
        "-B",
        join(s.dir, "attack.py"),
        secrets,
        inside,
      ],
      { env },
    );
  const unchanged = () => {
    const st = statSync(secrets);
    expect(st.mode & 0o777).toBe(0o600);
    expect(Math.round(st.mtimeMs / 1000)).toBe(1_000_000);
  };

  it.skipIf(!probe?.features.metadata)(
    "refuses every metadata call outside (EROFS), allows them inside",
    () => {
      const r = run(process.env);
      expect(r.status, r.stderr).toBe(0);
      const o = outcomes(r.stdout);
      for (const c of calls) expect(o[`out-${c}`], `out-${c}`).toBe("refused 30");
      // setxattr and removexattr on tmpfs/ext4 work for user.* attributes; both must not be refused.
      for (const c of calls) expect(o[`in-${c}`], `in-${c}`).toBe("ok");
      expect(o["in-rename"]).toBe("ok");
      expect(o["in-write"]).toBe("ok");
      expect(o.devnull).toBe("ok");
      unchanged();
    },
  );

  it("without namespaces, the fallback refuses every metadata call, inside too (EPERM), and says so", () => {
    expect(fallbackProbe?.features.metadata).toBe(false);
    const r = run(fallbackEnv);
    expect(r.status, r.stderr).toBe(0);
    const o = outcomes(r.stdout);
    for (const c of calls) expect(o[`out-${c}`], `out-${c}`).toBe("refused 1");
    for (const c of calls) expect(o[`in-${c}`], `in-${c}`).toBe("refused 1");
    expect(o["in-rename"]).toBe("ok");
    expect(o["in-write"]).toBe("ok");
    unchanged();
  });

  it.skipIf(!probe?.features.metadata)(
    "the sandbox gets a private /dev/shm: multiprocessing works, the host's stays unseen",
    () => {
      const marker = `/dev/shm/ratchet-native-${process.pid}`;
      writeFileSync(marker, "host shared memory");
      try {
        const py = [
          "import multiprocessing as mp, os, sys",
          "lock = mp.Lock()",
          "with lock: print('lock ok')",
          "print('host', 'seen' if os.path.exists(sys.argv[1]) else 'unseen')",
        ].join("\n");
        const r = launch([
          "--write",
          out,
          "--write-file",
          "/dev/null",
          "--",
          python?.exe as string,
          "-c",
          py,
          marker,
        ]);
        expect(r.status, r.stderr).toBe(0);
        expect(outcomes(r.stdout)).toEqual({ lock: "ok", host: "unseen" });
      } finally {
        rmSync(marker, { force: true });
      }
    },
  );

  it.skipIf(!probe?.features.metadata)(
    "a shell's chmod/touch in its working folder (a write root) still work",
    () => {
      const r = launch(
        [
          "--write",
          out,
          "--write-file",
          "/dev/null",
          "--",
          "/bin/bash",
          "-c",
          "echo hi > t.sh && chmod +x t.sh && touch -d 2020-01-01 t.sh && ./t.sh >/dev/null; chmod 644 " +
            secrets +
            " 2>&1; echo rc=$?",
        ],
        { cwd: out },
      );
      expect(r.stdout).toMatch(/Read-only file system\nrc=1/);
      expect(statSync(join(out, "t.sh")).mode & 0o100).toBe(0o100);
      unchanged();
    },
  );
});
