// The real python3's prefixes remembered across runs (python-memo.ts): real interpreter, real
// files, another process planting entries. Each "run" is a fresh per-process memo; the interpreter
// is asked afresh each time (exec's own answer is cached per process and PATH).
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findExecutable, type Interpreter } from "../exec/index.js";
import { allowedRoots, rememberedPython } from "./python-memo.js";

const QUERY =
  "import json,sys;print(json.dumps([sys.executable,sys.prefix,sys.base_prefix,sys.exec_prefix,sys.base_exec_prefix]))";
const which = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" });
const python = which.status === 0 ? which.stdout.trim() : "";
const root = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-pymemo-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** What resolvePython answers, asked afresh; counts the questions. */
function counter() {
  const c = {
    asked: 0,
    ask: async (env: NodeJS.ProcessEnv): Promise<Interpreter | undefined> => {
      c.asked++;
      const onPath = findExecutable("python3", env.PATH);
      if (!onPath) return undefined;
      const r = spawnSync(onPath, ["-c", QUERY], { encoding: "utf8", env: { PATH: env.PATH ?? "" } });
      const [exe, ...prefixes] = JSON.parse(r.stdout.trim()) as string[];
      const real = (p: string) => realpathSync(p);
      return {
        executable: exe as string,
        roots: [...new Set([dirname(real(exe as string)), ...prefixes.map(real)])],
      };
    },
  };
  return c;
}

function run(env: NodeJS.ProcessEnv, cacheDir: string, c: ReturnType<typeof counter>) {
  return rememberedPython(env, cacheDir, { ask: c.ask, memo: new Map() });
}

function onlyEntry(cacheDir: string): string {
  const files = readdirSync(join(cacheDir, "python")).filter((f) => f.endsWith(".json"));
  expect(files).toHaveLength(1);
  return join(cacheDir, "python", files[0] as string);
}

/** Rewrites the entry from another process, keeping its key, mode 0600. */
function plant(file: string, change: (e: { key: string; executable: string; roots: string[] }) => void) {
  const entry = JSON.parse(readFileSync(file, "utf8"));
  change(entry);
  const r = spawnSync(
    process.execPath,
    [
      "-e",
      "require('fs').writeFileSync(process.argv[1], process.argv[2], { mode: 0o600 })",
      file,
      JSON.stringify(entry),
    ],
    { encoding: "utf8" },
  );
  expect(r.status).toBe(0);
}

describe.skipIf(!python)("the real python3's prefixes across runs", () => {
  const env = { PATH: `${dirname(python)}:/usr/bin:/bin` };

  it("asks once, then answers from a 0600 file in a 0700 folder, the same answer", async () => {
    const cacheDir = join(root, "plain", "cache");
    // the cache folder is shared (the review cache's is 0755): the entries get a folder of their own
    mkdirSync(join(cacheDir, "review"), { recursive: true, mode: 0o755 });
    const c = counter();
    const first = await run(env, cacheDir, c);
    expect(c.asked).toBe(1);
    expect(first?.roots).toContain(dirname(realpathSync(python)));
    const file = onlyEntry(cacheDir);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(file)).mode & 0o777).toBe(0o700);
    const second = await run(env, cacheDir, c);
    expect(c.asked).toBe(1);
    expect(second).toEqual(first);
  });

  it("a planted entry naming a wider root is not used: the interpreter is asked", async () => {
    const cacheDir = join(root, "wider", "cache");
    const c = counter();
    const truth = await run(env, cacheDir, c);
    const file = onlyEntry(cacheDir);
    const real = realpathSync(python);
    for (const wider of ["/", "/etc", root, dirname(dirname(dirname(real))), `${dirname(real)}/..`]) {
      plant(file, (e) => e.roots.push(wider));
      const got = await run(env, cacheDir, c);
      expect(got).toEqual(truth);
      expect(got?.roots).not.toContain(wider);
      // the answer asked is what is kept again
      expect(JSON.parse(readFileSync(file, "utf8")).roots).toEqual(truth?.roots);
    }
    expect(c.asked).toBe(6);
    // another interpreter named for the same key is not used either
    plant(file, (e) => {
      e.executable = "/bin/sh";
    });
    expect(await run(env, cacheDir, c)).toEqual(truth);
    expect(c.asked).toBe(7);
  });

  it("an entry not ours in shape (group-readable, a link, not JSON, another key) is ignored", async () => {
    const cacheDir = join(root, "shape", "cache");
    const c = counter();
    const truth = await run(env, cacheDir, c);
    const file = onlyEntry(cacheDir);
    const good = readFileSync(file, "utf8");
    const spoiled: Array<() => void> = [
      () => writeFileSync(file, good, { mode: 0o644 }),
      () => {
        const elsewhere = join(root, "shape", "elsewhere.json");
        writeFileSync(elsewhere, good, { mode: 0o600 });
        symlinkSync(elsewhere, file);
      },
      () => writeFileSync(file, "{not json", { mode: 0o600 }),
      () => writeFileSync(file, JSON.stringify({ ...JSON.parse(good), key: "other" }), { mode: 0o600 }),
    ];
    for (const spoil of spoiled) {
      rmSync(file, { force: true });
      spoil();
      const before = c.asked;
      expect(await run(env, cacheDir, c)).toEqual(truth);
      expect(c.asked).toBe(before + 1);
    }
  });

  it("an interpreter replaced between two runs, or its pyvenv.cfg changed, gets a fresh query", async () => {
    const venv = join(root, "venv");
    const made = spawnSync(python, ["-m", "venv", "--without-pip", venv], { encoding: "utf8" });
    expect(made.status, made.stderr).toBe(0);
    const venvEnv = { PATH: `${join(venv, "bin")}:/usr/bin:/bin` };
    const cacheDir = join(root, "venv-cache");
    const c = counter();
    const first = await run(venvEnv, cacheDir, c);
    expect(first?.roots).toContain(venv);
    await run(venvEnv, cacheDir, c);
    expect(c.asked).toBe(1);
    // its pyvenv.cfg changed: asked, then remembered under the new key
    writeFileSync(join(venv, "pyvenv.cfg"), `${readFileSync(join(venv, "pyvenv.cfg"), "utf8")}# changed\n`);
    await run(venvEnv, cacheDir, c);
    expect(c.asked).toBe(2);
    await run(venvEnv, cacheDir, c);
    expect(c.asked).toBe(2);
    // a variable that moves prefixes
    await run({ ...venvEnv, PYTHONHOME: "/nowhere" }, cacheDir, c);
    expect(c.asked).toBe(3);
    // the entry on PATH replaced by a copy of the binary (another file, same bytes)
    const link = join(venv, "bin", "python3");
    const copy = join(root, "copy", "python3.11");
    mkdirSync(dirname(copy));
    copyFileSync(realpathSync(link), copy);
    rmSync(link);
    symlinkSync(copy, link);
    const replaced = await run(venvEnv, cacheDir, c);
    expect(c.asked).toBe(4);
    expect(replaced?.roots).toContain(dirname(copy));
  });

  it("a version manager's shim on PATH is asked every run, and nothing is kept", async () => {
    const shimDir = join(root, "shim");
    mkdirSync(shimDir);
    writeFileSync(join(shimDir, "python3"), `#!/bin/sh\nexec ${python} "$@"\n`, { mode: 0o755 });
    const shimEnv = { PATH: `${shimDir}:/usr/bin:/bin` };
    const cacheDir = join(root, "shim-cache");
    const c = counter();
    await run(shimEnv, cacheDir, c);
    await run(shimEnv, cacheDir, c);
    expect(c.asked).toBe(2);
    expect(existsSync(join(cacheDir, "python")) ? readdirSync(join(cacheDir, "python")) : []).toEqual([]);
  });

  it("an answer the interpreter did not give (the PATH entry and its folder, as when its answer is unreadable) is not kept", async () => {
    const failing = join(root, "failing");
    mkdirSync(failing);
    // a python3 that answers nothing: resolvePython falls back to the PATH entry itself
    writeFileSync(join(failing, "python3"), "#!/bin/sh\nexit 3\n", { mode: 0o755 });
    const failEnv = { PATH: `${failing}:/usr/bin:/bin` };
    const cacheDir = join(root, "failing-cache");
    const c = counter();
    const fallback = { executable: join(failing, "python3"), roots: [failing] };
    const ask = async (e: NodeJS.ProcessEnv) => {
      c.asked++;
      expect(e.PATH).toBe(failEnv.PATH);
      return fallback;
    };
    expect(await rememberedPython(failEnv, cacheDir, { ask, memo: new Map() })).toEqual(fallback);
    expect(await rememberedPython(failEnv, cacheDir, { ask, memo: new Map() })).toEqual(fallback);
    expect(c.asked).toBe(2);
    expect(existsSync(join(cacheDir, "python")) ? readdirSync(join(cacheDir, "python")) : []).toEqual([]);
    // the same shape for a real binary (Python's answer would name its prefix): not kept either
    const real = realpathSync(python);
    const bare = { executable: python, roots: [dirname(real)] };
    const askBare = async () => {
      c.asked++;
      return bare;
    };
    await rememberedPython(env, join(root, "bare-cache"), { ask: askBare, memo: new Map() });
    expect(
      existsSync(join(root, "bare-cache", "python")) ? readdirSync(join(root, "bare-cache", "python")) : [],
    ).toEqual([]);
  });

  it("allows only the binary's folder, a venv's folder and the standard library's prefix, never /", () => {
    const real = realpathSync(python);
    const allowed = allowedRoots(python, real);
    expect(allowed.has(dirname(real))).toBe(true);
    expect(allowed.has("/")).toBe(false);
    expect(allowed.size).toBeLessThanOrEqual(3);
    for (const r of allowed) expect(dirname(real).startsWith(r)).toBe(true);
  });
});
