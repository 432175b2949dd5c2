/**
 * Shared set-up of the door's escape tests: a temp workspace made by the built CLI, a workflow
 * whose saved scripts are the attacks, and `ratchet run` driving them. The scripts report what
 * they managed in their output folder (`found.json`), so each test asserts on the attack's result.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CliResult, makeWorkspace, ROOT, type TestWorkspace } from "../helpers/cli.js";
import { runsOf } from "../helpers/run-home.js";

export interface AttackStep {
  id: string;
  /** `main.py` or `main.mjs`. */
  file: "main.py" | "main.mjs";
  code: string;
  deps?: string[];
  /** Files that must exist (validation). Default `found.json`. */
  outputs?: string[];
}

/** Writes a workflow of `steps` under `<ws>/workflows/<id>`; returns its folder. */
export function attackWorkflow(
  ws: TestWorkspace,
  id: string,
  steps: AttackStep[],
  variables: string[] = [],
): string {
  const home = join(ws.dir, "workflows", id);
  const lines = [
    `id: ${id}`,
    ...(variables.length
      ? ["variables:", ...variables.flatMap((v) => [`  ${v}:`, `    description: ${v}`])]
      : []),
    "defaults:",
    "  declared_execution_mode: learn_code",
    "steps:",
  ];
  for (const s of steps) {
    lines.push(`  - id: ${s.id}`, `    description: attack ${s.id}`);
    if (s.deps?.length) lines.push(`    context_dependencies: [${s.deps.join(", ")}]`);
    lines.push("    validation:", "      files:");
    for (const f of s.outputs ?? ["found.json"])
      lines.push(`        - file_name: ${f}`, "          must_exist: true");
    mkdirSync(join(home, "learnings", s.id), { recursive: true });
    writeFileSync(join(home, "learnings", s.id, s.file), s.code);
  }
  writeFileSync(join(home, "workflow.yaml"), `${lines.join("\n")}\n`);
  return home;
}

export interface RunJson {
  run_id: string;
  status: string;
  steps: { step_id: string; outcome: string; error: string | null; write_protection?: string }[];
  write_protection: { python: string; javascript: string; reason: string };
}

export function runJson(r: CliResult): RunJson {
  try {
    return JSON.parse(r.stdout) as RunJson;
  } catch {
    throw new Error(`not JSON (status ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
}

/** The `found.json` a step's script wrote in run `runId`. */
export function found<T = Record<string, unknown>>(home: string, runId: string, stepId: string): T {
  return JSON.parse(readFileSync(join(runsOf(home), runId, stepId, "found.json"), "utf8")) as T;
}

/** The attack scripts themselves (they hold the needle they hunt for). */
const isScript = (p: string): boolean => /\/main\.(py|mjs)$/.test(p);

/** Every file under `dir` whose bytes contain `needle` (the store, logs, blobs, outputs), the attack scripts aside. */
export function filesContaining(dir: string, needle: string): string[] {
  const hits: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p);
      else if (st.isFile() && !isScript(p) && readFileSync(p).includes(needle)) hits.push(p);
    }
  };
  walk(dir);
  return hits;
}

export async function workspace(prefix: string): Promise<TestWorkspace> {
  return makeWorkspace(prefix);
}

/** What `ratchet-confine --probe` says here (empty when it was not built or cannot run). */
export function probe(): string {
  const r = spawnSync(join(ROOT, "dist", "native", "ratchet-confine"), ["--probe"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout : "";
}

/**
 * Python that scans every readable `/proc/<pid>/environ` and `cmdline`, its parent chain first,
 * for `needle`, printing what it finds (so a leak would also land in the logs) and writing the
 * paths to `found.json`.
 */
export const PY_PROC_SCAN = (needle: string) => `import json
import os

needle = ${JSON.stringify(needle)}.encode()
hits = []
tried = []


def look(pid):
    for name in ("environ", "cmdline"):
        p = "/".join(["", "proc", str(pid), name])
        tried.append(p)
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if needle in data:
            hits.append(p)
            print(data.decode("utf-8", "replace"))


def parent_of(pid):
    try:
        with open("/".join(["", "proc", str(pid), "stat"])) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


pid = os.getppid()
while pid > 1:
    look(pid)
    pid = parent_of(pid)
try:
    pids = [n for n in os.listdir("/proc") if n.isdigit()]
except OSError:
    pids = []
for n in pids:
    look(n)
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump({"hits": sorted(set(hits)), "tried": len(tried)}, f)
`;

/** The same scan in JavaScript (Node's permission model allows reads; the launcher must not). */
export const JS_PROC_SCAN = (
  needle: string,
) => `import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const needle = ${JSON.stringify(needle)};
const hits = new Set();
let tried = 0;
function look(pid) {
  for (const name of ["environ", "cmdline"]) {
    const p = ["", "proc", String(pid), name].join("/");
    tried++;
    let data;
    try {
      data = readFileSync(p, "latin1");
    } catch {
      continue;
    }
    if (data.includes(needle)) {
      hits.add(p);
      console.log(data);
    }
  }
}
function parentOf(pid) {
  try {
    const stat = readFileSync(["", "proc", String(pid), "stat"].join("/"), "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return 0;
  }
}
for (let pid = process.ppid; pid > 1; pid = parentOf(pid)) look(pid);
let pids = [];
try {
  pids = readdirSync("/proc").filter((n) => /^\\d+$/.test(n));
} catch {}
for (const n of pids) look(n);
writeFileSync(join(process.env.STEP_OUTPUT_DIR, "found.json"), JSON.stringify({ hits: [...hits].sort(), tried }));
`;
