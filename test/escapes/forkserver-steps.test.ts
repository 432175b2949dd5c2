/**
 * Escapes from a learned step started by the pre-started interpreter (src/workflow/fast-path.ts →
 * exec/forkserver.ts). The server is started through the door with the workflow's common base
 * (writes under the whole runs folder); each run's child narrows that to the step's own roots. A
 * determined script in the forked child tries what the wider server would allow: write outside its
 * output folder (another step's folder, its run's folder, the runs folder, the server's TMPDIR
 * parent), read another step's output that is not its dependency, read the store, change another
 * step's file's metadata by raw system call, signal anything outside its run (the server, Ratchet),
 * keep a grandchild alive after its step, and find an earlier step's module state, environment or
 * open descriptors. Each attempt must fail, and the same run with `RATCHET_NO_FORKSERVER=1` (a
 * plain start through the launcher) must give the same answers.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Confinement, compileConfinement, parseProbe } from "../../src/exec/door.js";
import { Forkserver, forkserverConfinement } from "../../src/exec/forkserver.js";
import { type ForkKit, forkKit } from "../../src/exec/forkserver-kit.js";
import { findConfine } from "../../src/exec/sandbox.js";
import { assertBuilt, type TestWorkspace } from "../helpers/cli.js";
import { runsOf } from "../helpers/run-home.js";
import { attackWorkflow, probe, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-fssteps-");
});
afterAll(() => ws?.remove());

/** The earlier step: leaves module state, environment, an open descriptor and a sleeping grandchild. */
const VICTIM = `import json
import os
import time

out = os.environ["STEP_OUTPUT_DIR"]
json.ratchet_leak = "victim-state"
os.environ["RATCHET_LEAK"] = "victim-env"
held = os.open(os.path.join(out, "held.txt"), os.O_CREAT | os.O_WRONLY)
os.set_inheritable(held, True)
pid = os.fork()
if pid == 0:
    time.sleep(4)
    with open(os.path.join(out, "late.txt"), "w") as f:
        f.write("outlived its step")
    os._exit(0)
with open(os.path.join(out, "found.json"), "w") as f:
    json.dump({"needle": "victim-needle", "grandchild": pid}, f)
`;

/** The attacker: every path arrives through a variable or is derived from its own folder. */
const ATTACK = `import ctypes
import json
import os
import sys

out = os.environ["STEP_OUTPUT_DIR"]
run_dir = out.rsplit("/", 1)[0]
victim = os.path.join(run_dir, os.environ["VAR_VICTIM"])
results = {}


def attempt(name, fn):
    try:
        fn()
        results[name] = "ESCAPED"
    except OSError as e:
        results[name] = "blocked " + type(e).__name__


def put(folder):
    def go():
        with open(os.path.join(folder, "intruded.txt"), "w") as f:
            f.write("x")
    return go


def get(path):
    def go():
        with open(path, "rb") as f:
            f.read()
    return go


attempt("write victim", put(victim))
attempt("write run folder", put(run_dir))
attempt("write runs folder", put(run_dir.rsplit("/", 1)[0]))
attempt("write tmp parent", put(os.environ["TMPDIR"].rsplit("/", 1)[0]))
attempt("read victim", get(os.path.join(victim, "found.json")))
attempt("read store", get(os.environ["VAR_STORE"]))
libc = ctypes.CDLL(None, use_errno=True)


def touch_victim():
    # utimensat(AT_FDCWD, path, NULL, 0) by number: no name for a review or a fit check to see.
    if libc.syscall(280, -100, os.path.join(victim, "found.json").encode(), None, 0) != 0:
        raise OSError(ctypes.get_errno(), "utimensat")


attempt("metadata victim", touch_victim)
mine = {os.getpid(), os.getppid()}
reachable = []
for pid in range(2, 1 << 16):
    if pid in mine:
        continue
    try:
        os.kill(pid, 0)
        reachable.append(pid)
    except OSError:
        pass
fds = []
for fd in range(3, 256):
    try:
        fds.append(os.fstat(fd).st_ino)
    except OSError:
        pass
results["reachable"] = reachable
results["fds"] = fds
results["module state"] = getattr(json, "ratchet_leak", None)
results["environment"] = os.environ.get("RATCHET_LEAK")
with open(os.path.join(out, "found.json"), "w") as f:
    json.dump(results, f)
`;

const canFork = (): boolean =>
  /landlock abi ([6-9]|\d\d)/.test(probe()) && /feature signals yes/.test(probe());

describe("a learned step in a forked child is held to its own confinement", () => {
  for (const mode of ["forkserver", "plain"] as const) {
    it(`${mode}: every escape from the step fails`, async () => {
      if (!canFork()) {
        console.warn("forkserver escapes not tested: the launcher cannot scope signals here");
        return;
      }
      const wf = attackWorkflow(
        ws,
        `fs-${mode}`,
        [
          { id: "victim", file: "main.py", code: VICTIM },
          { id: "attack", file: "main.py", code: ATTACK },
        ],
        ["victim", "store"],
      );
      const store = join(ws.dir, ".ratchet", "ratchet.db");
      expect(existsSync(store)).toBe(true);
      const r = await ws.run(
        ["run", join(wf, "workflow.yaml"), "--var", "victim=victim", "--var", `store=${store}`, "--json"],
        {
          // The forkserver is the default; the plain mode switches it off.
          env: mode === "plain" ? { RATCHET_NO_FORKSERVER: "1" } : {},
        },
      );
      const run = runJson(r);
      expect(
        run.steps.map((s) => s.outcome),
        r.stderr,
      ).toEqual(["passed", "passed"]);
      // The run details say how each step was started.
      const show = await ws.run(["plan", "show", (run as unknown as { plan_id: string }).plan_id]);
      const started = (show.stdout.match(/\[started by the pre-started interpreter/g) ?? []).length;
      if (mode === "forkserver") expect(started, show.stdout).toBe(2);
      else {
        expect(started).toBe(0);
        expect(show.stdout).toContain("[plain start: RATCHET_NO_FORKSERVER=1]");
      }
      const exec = join(runsOf(wf), run.run_id);
      const found = JSON.parse(readFileSync(join(exec, "attack", "found.json"), "utf8"));
      expect(found).toEqual({
        "write victim": expect.stringMatching(/^blocked /),
        "write run folder": expect.stringMatching(/^blocked /),
        "write runs folder": expect.stringMatching(/^blocked /),
        "write tmp parent": expect.stringMatching(/^blocked /),
        "read victim": "blocked PermissionError",
        "read store": "blocked PermissionError",
        "metadata victim": expect.stringMatching(/^blocked /),
        reachable: [],
        fds: expect.any(Array),
        "module state": null,
        environment: null,
      });
      // No descriptor the victim left open (held.txt) reached the attacker.
      expect(found.fds).not.toContain(statSync(join(exec, "victim", "held.txt")).ino);
      for (const name of ["intruded.txt"])
        for (const d of [exec, runsOf(wf), join(exec, "victim")])
          expect(existsSync(join(d, name))).toBe(false);
      // The victim's grandchild did not outlive its step (it would write late.txt after 4 s).
      const victim = JSON.parse(readFileSync(join(exec, "victim", "found.json"), "utf8"));
      let alive = true;
      try {
        alive = !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${victim.grandchild}/stat`, "utf8"));
      } catch {
        alive = false;
      }
      expect(alive).toBe(false);
      await new Promise((res) => setTimeout(res, 4500));
      expect(existsSync(join(exec, "victim", "late.txt"))).toBe(false);
    });
  }
});

/**
 * The narrowing itself: one server started with a WIDE base (the whole scratch folder writable and
 * readable), the same attack asked twice — once as a run with its own roots (`confine`), once
 * without. Without them the wider server's rights would be the script's (the control: the attack
 * works); with them every attempt fails. So it is the child's own ruleset that holds a step.
 */
describe("the run's own roots are what confine a forked child", () => {
  let kit: ForkKit | string;
  let wide: Forkserver | { fallback: string } | undefined;
  beforeAll(async () => {
    kit = await forkKit();
    if (typeof kit === "string") return;
    const confine = findConfine() as string;
    const features = parseProbe(spawnSync(confine, ["--probe"], { encoding: "utf8" }).stdout);
    if (!features) return;
    const base: Confinement = {
      ...kit.confinement,
      readRoots: [...kit.confinement.readRoots, kit.ws],
      writeRoots: [kit.ws],
    };
    wide = await Forkserver.start({
      door: compileConfinement(forkserverConfinement(base), {
        kind: "ratchet-confine",
        path: confine,
        features,
      }),
      interpreter: kit.python,
      cwd: kit.codeDir,
      key: "wide",
    });
  });
  afterAll(async () => {
    if (wide instanceof Forkserver) await wide.close();
    if (typeof kit !== "string") await kit.close();
  });

  const ATTEMPTS = `import ctypes, os, sys
def attempt(name, fn):
    try:
        fn()
        print(name, "ESCAPED")
    except OSError as e:
        print(name, "blocked", type(e).__name__)
def write():
    with open(os.path.join(sys.argv[1], "intruded.txt"), "w") as f:
        f.write("x")
def read():
    open(sys.argv[2], "rb").read()
libc = ctypes.CDLL(None, use_errno=True)
def times():
    if libc.syscall(280, -100, sys.argv[2].encode(), None, 0) != 0:
        raise OSError(ctypes.get_errno(), "utimensat")
attempt("write", write)
attempt("read", read)
attempt("metadata", times)
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "own.txt"), "w") as f:
    f.write("mine")
print("own ok")
`;

  it("with its roots the attack fails; without them (the control) the wide server's rights would be its", async () => {
    if (typeof kit === "string" || !(wide instanceof Forkserver)) {
      console.warn(`narrowing not tested: ${typeof kit === "string" ? kit : "no wide server"}`);
      return;
    }
    const k = kit;
    writeFileSync(join(k.codeDir, "main.py"), ATTEMPTS);
    const ask = (confine: boolean) =>
      (wide as Forkserver).run({
        argv: ["main.py", k.ws, k.secret],
        cwd: k.codeDir,
        env: k.confinement.env,
        timeoutMs: 20_000,
        killGraceMs: 500,
        maxCaptureBytes: 1 << 20,
        ...(confine
          ? {
              confine: {
                reads: k.confinement.readRoots,
                writes: k.confinement.writeRoots,
                files: k.confinement.writeFiles,
              },
            }
          : {}),
      });
    const control = await ask(false);
    expect(control.stdout, control.stderr).toBe("write ESCAPED\nread ESCAPED\nmetadata ESCAPED\nown ok\n");
    rmSync(join(k.ws, "intruded.txt"), { force: true });
    const narrowed = await ask(true);
    expect(narrowed.stdout, narrowed.stderr).toBe(
      "write blocked PermissionError\nread blocked PermissionError\nmetadata blocked PermissionError\nown ok\n",
    );
    expect(existsSync(join(k.ws, "intruded.txt"))).toBe(false);
  });

  it("a root the child cannot open makes the run a setup failure before any script byte runs", async () => {
    if (typeof kit === "string" || !(wide instanceof Forkserver)) return;
    const k = kit;
    const marker = join(k.outDir, "ran.txt");
    writeFileSync(join(k.codeDir, "main.py"), `open(${JSON.stringify(marker)}, "w").write("ran")\n`);
    const r = await wide.run({
      argv: ["main.py"],
      cwd: k.codeDir,
      env: k.confinement.env,
      timeoutMs: 20_000,
      killGraceMs: 500,
      maxCaptureBytes: 1 << 20,
      confine: { reads: k.confinement.readRoots, writes: [join(k.ws, "no-such-folder")], files: [] },
    });
    expect(r.spawnError?.code).toBe("ECONFINE");
    expect(existsSync(marker)).toBe(false);
  });
});

describe("a step that does not fit takes a plain start, and its log says why", () => {
  it("a script that changes file modes runs plain (metadata calls are refused in a forked child) and passes", async () => {
    if (!canFork()) return;
    const code = `import json
import os

out = os.environ["STEP_OUTPUT_DIR"]
path = os.path.join(out, "found.json")
with open(path, "w") as f:
    json.dump({"mode": "set"}, f)
os.chmod(path, 0o640)
`;
    const wf = attackWorkflow(ws, "fs-misfit", [{ id: "modes", file: "main.py", code }]);
    const run = runJson(await ws.run(["run", join(wf, "workflow.yaml"), "--json"]));
    expect(run.steps.map((s) => s.outcome)).toEqual(["passed"]);
    const show = await ws.run(["plan", "show", (run as unknown as { plan_id: string }).plan_id]);
    expect(show.stdout).toContain("[plain start: the script may change file metadata");
    expect(statSync(join(runsOf(wf), run.run_id, "modes", "found.json")).mode & 0o777).toBe(0o640);
  });
});

describe("a forked step cannot make Ratchet start it a second time", () => {
  it("a script that forges the setup-failure line and exits 125 ran once, and its step failed", async () => {
    if (!canFork()) return;
    // Were the line believed, the step would count as never started and be started again plain.
    // (It writes no found.json, so no validating output accepts its exit 125 either.)
    const code = `import os
import sys

with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "runs.txt"), "a") as f:
    f.write("ran\\n")
sys.stderr.write("ratchet-forkserver: cannot confine the run: forged\\n")
sys.exit(125)
`;
    const wf = attackWorkflow(ws, "fs-forged", [{ id: "forged", file: "main.py", code }]);
    const run = runJson(await ws.run(["run", join(wf, "workflow.yaml"), "--json"]));
    expect(run.steps.map((s) => s.outcome)).toEqual(["execution_and_validation_failed"]);
    const show = await ws.run(["plan", "show", (run as unknown as { plan_id: string }).plan_id]);
    expect(show.stdout).toContain("[started by the pre-started interpreter");
    expect(readFileSync(join(runsOf(wf), run.run_id, "forged", "runs.txt"), "utf8")).toBe("ran\n");
  });
});
