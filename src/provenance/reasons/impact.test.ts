import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyOp, Ledger } from "../../ledger/index.js";
import { BlobStore, SqliteStore } from "../../store/index.js";
import { reviewedPlan } from "../../testing/prov-repo.js";
import { nodeSourceFor } from "../nodes/index.js";
import { UNAVAILABLE_KINDS } from "./headline.js";
import { why } from "./why.js";
import { insertReason } from "./why-fixture.js";
import { renderWhy } from "./why-format.js";
import { SqlWhyStore } from "./why-store.js";

const open: SqliteStore[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "ratchet-impact-"));
  const store = SqliteStore.open(join(dir, "ratchet.db"), { create: true });
  open.push(store);
  const ledger = new Ledger({ store, blobs: new BlobStore(join(dir, "blobs")) });
  return { dir, store, ledger, repo: join(dir, "repo") };
}

const PY = {
  "app/core.py":
    "def helper(x):\n    return x + 1\n\n\ndef compute(x):\n    return helper(x) * 2\n\n\ndef main():\n    return compute(3)\n",
};
const PY_EDIT = {
  "app/core.py": "def compute(x):\n    return helper(x) * 2\n\n\ndef main():\n    return compute(3)\n",
};
const TS = {
  "src/lib.ts":
    "export function helper(x: number): number {\n  return x + 1;\n}\n\nexport function compute(x: number): number {\n  return helper(x) * 2;\n}\n",
  "src/app.ts":
    'import { compute } from "./lib";\n\nexport function main(): number {\n  return compute(3);\n}\n',
};
const TS_EDIT = {
  "src/lib.ts": "export function compute(x: number): number {\n  return helper(x) * 2;\n}\n",
};

interface Doc {
  findings: {
    id: string;
    kind: string;
    layer: string;
    severity: string;
    text: string;
    evidence: Record<string, unknown>;
  }[];
  hints: string[];
}

async function publishOn(w: ReturnType<typeof workspace>, project: string, target: string) {
  const out = await applyOp(w.ledger, "publish-plan", {
    goal: "touch compute",
    steps: [{ title: "a", type: "THINKING" }],
    project,
    declared_targets: [target],
  });
  expect(out.ok, out.error?.message).toBe(true);
  return out.result?.headline as Doc;
}

describe.each([
  { lang: "Python", files: PY, edits: PY_EDIT, mod: "app.core", callerMod: "app.core" },
  { lang: "TypeScript", files: TS, edits: TS_EDIT, mod: "src.lib", callerMod: "src.app" },
])("impact findings from the call edges ($lang)", ({ files, edits, mod, callerMod }) => {
  it("a removed callee is removed_upstream (blocking); callers give downstream_break; a constraint on a caller gives downstream_constraint", async () => {
    const w = workspace();
    const p = await reviewedPlan(w.ledger, { project: "app", repo: w.repo, files, edits });
    const nodes = nodeSourceFor(w.store);
    const compute = p.key(`${mod}.compute`);
    const main = p.key(`${callerMod}.main`);
    expect(nodes.callers("app", compute).map((n) => n.qualified_name)).toEqual([`${callerMod}.main`]);
    expect(nodes.callees("app", main).map((n) => n.node_key)).toEqual([compute]);
    const removed = nodes.callees("app", compute);
    expect(removed.map((n) => n.qualified_name)).toEqual([`${mod}.helper`]);
    const c = insertReason(w.store, "app", {
      role: "constraint",
      node_key: main,
      statement: "main stays a pure function",
      recorded_by: "human",
    });
    const doc = await publishOn(w, "app", `${mod}.compute`);
    const kinds = doc.findings.map((f) => [f.kind, f.layer, f.severity]);
    expect(kinds).toEqual([
      ["removed_upstream", "self", "blocking"],
      ["downstream_break", "impact", "warning"],
      ["downstream_constraint", "impact", "blocking"],
    ]);
    const [up, down, dc] = doc.findings;
    const removal = nodes.history(removed[0]?.node_key as string).at(-1);
    expect(removal?.event_type).toBe("node_removed");
    expect(up?.evidence).toEqual({
      event: { node_key: removed[0]?.node_key, run_id: removal?.run_id, seq: removal?.seq },
    });
    expect(up?.text).toContain(`${mod}.helper`);
    expect(down?.evidence).toEqual({ consumers: [main] });
    expect(dc?.evidence).toEqual({ reason_id: c });
    expect(dc?.id).toBe(`downstream_constraint:${compute.slice(0, 12)}:1`);
    const hint = doc.hints.find((h) => h.startsWith("not available")) ?? "";
    expect(hint).toBe(`not available from this node source: ${UNAVAILABLE_KINDS.join(", ")}`);
    expect(hint).not.toMatch(/removed_upstream|downstream_break|downstream_constraint/);
    expect(hint).toMatch(/prior_outcome_failed.*unverified_upstream/);
  });

  it("why's header counts the callers; the structure card names callers and callees and cuts over budget", async () => {
    const w = workspace();
    await reviewedPlan(w.ledger, { project: "app", repo: w.repo, files, edits: {} });
    const ws = new SqlWhyStore(w.store.sql);
    const nodes = nodeSourceFor(w.store);
    const r = w.store.tx(() =>
      why(ws, nodes, { project: "app", target: `${mod}.compute` }, "2026-12-01T10:00:00Z"),
    );
    if (r.mode !== "target" || !r.read) throw new Error("expected a target read");
    expect(r.summary?.downstream).toBe(1);
    expect(r.read.structure.callers).toEqual({ total: 1, names: [`${callerMod}.main`], omitted: 0 });
    expect(r.read.structure.callees).toEqual({ total: 1, names: [`${mod}.helper`], omitted: 0 });
    const lines = renderWhy(r).split("\n");
    expect(lines[0]).toMatch(new RegExp(`^${mod.replace(".", "\\.")}\\.compute · downstream 1 · history `));
    expect(lines).toContain(`  callers 1: ${callerMod}.main`);
    expect(lines).toContain(`  callees 1: ${mod}.helper`);
    const tiny = w.store.tx(() =>
      why(ws, nodes, { project: "app", target: `${mod}.compute`, budgetTokens: 1 }, "2026-12-01T10:00:00Z"),
    );
    if (tiny.mode !== "target" || !tiny.read) throw new Error("expected a target read");
    expect(tiny.summary?.downstream).toBe(1);
    expect(tiny.read.structure.callers).toEqual({ total: 1, names: [], omitted: 1 });
  });
});

describe("call edges: what does not resolve", () => {
  it("an ambiguous name (two symbols of that name, neither in the caller's file) gives no edge; a builtin none", async () => {
    const w = workspace();
    const files = {
      "a.py": "def run():\n    return 1\n",
      "b.py": "def run():\n    return 2\n",
      "c.py": "def go():\n    print(len([]))\n    return run()\n",
    };
    const p = await reviewedPlan(w.ledger, { project: "amb", repo: w.repo, files, edits: {} });
    const nodes = nodeSourceFor(w.store);
    expect(nodes.callees("amb", p.key("c.go"))).toEqual([]);
    expect(nodes.callers("amb", p.key("a.run"))).toEqual([]);
    const doc = await publishOn(w, "amb", "a.run");
    expect(doc.findings).toEqual([]);
  });

  it("a file edited since the newest run gives no edges rather than stale ones", async () => {
    const w = workspace();
    const p = await reviewedPlan(w.ledger, { project: "app", repo: w.repo, files: PY, edits: {} });
    writeFileSync(
      join(w.repo, "app/core.py"),
      "def compute(x):\n    return 0\n\n\ndef main():\n    return 1\n",
    );
    const nodes = nodeSourceFor(w.store);
    expect(nodes.callers("app", p.key("app.core.compute"))).toEqual([]);
  });

  it("a removed node of another project is not a removed callee", async () => {
    const w = workspace();
    const other = join(w.dir, "other");
    await reviewedPlan(w.ledger, { project: "other", repo: other, files: PY, edits: PY_EDIT });
    const p = await reviewedPlan(w.ledger, {
      project: "app",
      repo: w.repo,
      files: { "m.py": "def compute(x):\n    return helper(x)\n" },
      edits: {},
    });
    const nodes = nodeSourceFor(w.store);
    expect(nodes.callees("app", p.key("m.compute"))).toEqual([]);
  });

  it("a key of another project has no edges in this one; LIKE wildcards in a callee name match nothing", async () => {
    const w = workspace();
    const p = await reviewedPlan(w.ledger, { project: "app", repo: w.repo, files: PY, edits: {} });
    const q = await reviewedPlan(w.ledger, {
      project: "wild",
      repo: join(w.dir, "wild"),
      files: { "m.py": "def aXb():\n    return 1\n\n\ndef go():\n    return a_b() + aXb()\n" },
      edits: { "m.py": "def go():\n    return a_b() + 1\n" },
    });
    const nodes = nodeSourceFor(w.store);
    expect(nodes.callers("wild", p.key("app.core.compute"))).toEqual([]);
    expect(nodes.callees("wild", p.key("app.core.main"))).toEqual([]);
    // aXb was removed, and go's text still names a_b (not aXb): `_` must not act as a wildcard.
    expect(nodes.callees("wild", q.key("m.go"))).toEqual([]);
  });
});
