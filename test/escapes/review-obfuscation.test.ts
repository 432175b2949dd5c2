/**
 * Escape: static review passing obfuscated code (issue 13, item 13). Each script below is a
 * plausible learned script — it writes a real output under STEP_OUTPUT_DIR — with one piece of code
 * hidden from review the way a determined author would hide it. Each must be a blocking finding of
 * the named rule, through `reviewScript` and through the built `ratchet review <file>` (exit 9,
 * `review_blocked`). A clean control passes both ways.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RuleId, reviewScript } from "../../src/review/index.js";
import { assertBuilt, makeTempDir, ratchet } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000 });

/** A learned Python script around `body` (which may use os, sys, json and OUT). */
const py = (body: string): string =>
  [
    "import json",
    "import os",
    "import sys",
    "",
    'OUT = os.environ["STEP_OUTPUT_DIR"]',
    ...body.split("\n"),
    'with open(os.path.join(OUT, "report.json"), "w") as f:',
    '    json.dump({"rows": len(sys.argv)}, f)',
    "",
  ].join("\n");

/** A learned JavaScript module around `body` (which may use fs, path and out). */
const js = (body: string): string =>
  [
    'import fs from "node:fs";',
    'import path from "node:path";',
    "",
    "const out = process.env.STEP_OUTPUT_DIR;",
    ...body.split("\n"),
    'fs.writeFileSync(path.join(out, "report.json"), JSON.stringify({ rows: process.argv.length }));',
    "",
  ].join("\n");

type Case = [name: string, source: string, rule: RuleId];

const PYTHON: Case[] = [
  ["exec(base64.b64decode(…))", py('import base64\nexec(base64.b64decode("aW1wb3J0IG9z"))'), "R11"],
  ["eval of an argument", py("total = eval(sys.argv[1])"), "R11"],
  ["compile + exec of a code object", py('code = compile("x = 1", "<s>", "exec")'), "R11"],
  ["exec of text read from a dependency", py('exec(open(os.path.join(sys.argv[1], "x.py")).read())'), "R11"],
  ["alias: e = eval; e(…)", py('e = eval\ne("1 + 1")'), "R11"],
  ["alias: from builtins import exec as run", py('from builtins import exec as run\nrun("x = 1")'), "R11"],
  ["alias: b = __builtins__; b.exec", py('b = __builtins__\nb.exec("x = 1")'), "R11"],
  ["getattr(builtins, 'ex' + 'ec')", py('import builtins\ngetattr(builtins, "ex" + "ec")("x = 1")'), "R11"],
  ["vars(__import__('builtins'))['exec']", py('vars(__import__("builtins"))["exec"]("x = 1")'), "R11"],
  [
    "import_module('built' + 'ins').eval",
    py('import importlib\nimportlib.import_module("built" + "ins").eval("1")'),
    "R11",
  ],
  ["eval passed on to map()", py("vals = list(map(eval, sys.argv[1:]))"), "R11"],
  ["runpy.run_path", py('import runpy\nrunpy.run_path(os.path.join(sys.argv[1], "x.py"))'), "R11"],
  ["marshal.loads of a code object", py("import marshal\nmarshal.loads(bytes.fromhex(sys.argv[1]))"), "R11"],
  ["__import__(computed)", py("mod = __import__(sys.argv[1])"), "R12"],
  ["__import__ of a reversed name", py('mod = __import__("so"[::-1])'), "R12"],
  [
    "importlib.import_module(computed)",
    py('import importlib\nmod = importlib.import_module(bytes.fromhex("6f73").decode())'),
    "R12",
  ],
  ["getattr(os, computed)", py('run = getattr(os, "".join(["sys", "tem"][::-1][::-1]))'), "R12"],
  ["globals()[…]", py('globals()["OUT"] = "/tmp"'), "R12"],
  ["vars()", py("scope = vars()"), "R12"],
  ["__builtins__ access", py("b = __builtins__"), "R12"],
  ["setattr on a module", py('setattr(os, "getcwd", lambda: "/")'), "R12"],
  ["sys.modules[computed]", py("mod = sys.modules[sys.argv[1]]"), "R12"],
  ["__subclasses__ walk", py("classes = ().__class__.__bases__[0].__subclasses__()"), "R12"],
  [
    "JSON result held in a string",
    py(
      'with open(os.path.join(OUT, "answer.json"), "w") as g:\n    json.dump(json.loads(\'{"answer": 42}\'), g)',
    ),
    "R13",
  ],
  [
    "JSON text written straight to the output",
    py(
      'with open(os.path.join(OUT, "answer.json"), "w") as g:\n    g.write(\'{"total": 1280, "currency": "EUR"}\')',
    ),
    "R13",
  ],
  ["browser ref held as data", py('step = {"action": "click", "ref": "e123"}'), "R10"],
  [
    "browser ref as a keyword",
    py('def browser(*a, **k):\n    return a, k\nbrowser("click", ref="e7")'),
    "R10",
  ],
];

const JAVASCRIPT: Case[] = [
  ["eval", js('eval("1 + 1");'), "R11"],
  ["alias: const e = eval", js('const e = eval;\ne("1 + 1");'), "R11"],
  ["indirect (0, eval)", js('(0, eval)("1 + 1");'), "R11"],
  ["globalThis['ev' + 'al']", js('globalThis["ev" + "al"]("1 + 1");'), "R11"],
  ["destructured from globalThis", js('const { eval: run } = globalThis;\nrun("1 + 1");'), "R11"],
  ["new Function", js('const f = new Function("return process");'), "R11"],
  ["Function(…)", js('const f = Function("return process");'), "R11"],
  ["constructor of a constructor", js('({}).constructor.constructor("return process")();'), "R11"],
  ["vm through a folded require", js('const vm = require("v" + "m");\nvm.runInNewContext("1 + 1");'), "R11"],
  ["setTimeout with code text", js('setTimeout("globalThis.x = 1", 1);'), "R11"],
  ["require(computed)", js("const m = require(process.argv[2]);"), "R12"],
  ["import(computed)", js("const m = await import(process.argv[2]);"), "R12"],
  ["globalThis[computed]", js("const f = globalThis[process.argv[2]];"), "R12"],
  ["process.binding", js('const b = process.binding("spawn_sync");'), "R12"],
  [
    "JSON text written to the output",
    js('fs.writeFileSync(path.join(out, "a.json"), \'{"answer": 42}\');'),
    "R13",
  ],
  [
    "JSON text parsed and re-serialised",
    js('fs.writeFileSync(path.join(out, "a.json"), JSON.stringify(JSON.parse(\'{"answer": 42}\')));'),
    "R13",
  ],
  ["browser ref held as data", js('const step = { action: "click", ref: "e12" };'), "R10"],
];

const CLEAN_PY = py('import re\nPATTERN = re.compile(r"^\\d+$")\nlevel = getattr(json, "dumps")');
const CLEAN_JS = js('const os = await import("node:os");\nconst n = JSON.parse(\'{"a": 1}\').a;');

describe("escape: obfuscated code through reviewScript", () => {
  it.each(PYTHON)("python: %s", async (_name, source, rule) => {
    const r = await reviewScript(source, { language: "python" });
    expect(r.ok).toBe(false);
    expect(r.findings.filter((f) => f.severity === "blocking").map((f) => f.rule)).toContain(rule);
  });
  it.each(JAVASCRIPT)("javascript: %s", async (_name, source, rule) => {
    const r = await reviewScript(source, { language: "javascript" });
    expect(r.ok).toBe(false);
    expect(r.findings.filter((f) => f.severity === "blocking").map((f) => f.rule)).toContain(rule);
  });
  it("the clean controls pass", async () => {
    expect((await reviewScript(CLEAN_PY, { language: "python" })).findings).toEqual([]);
    expect((await reviewScript(CLEAN_JS, { language: "javascript" })).findings).toEqual([]);
  });
});

describe("escape: obfuscated code through `ratchet review <file>`", () => {
  let dir: string;
  beforeAll(() => {
    assertBuilt();
    dir = makeTempDir("ratchet-escape-review-");
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const cases = [
    ...PYTHON.map(([name, source, rule], i) => [name, `case-${i}.py`, source, rule] as const),
    ...JAVASCRIPT.map(([name, source, rule], i) => [name, `case-${i}.mjs`, source, rule] as const),
  ];
  it.each(cases)("%s: exit 9 with a blocking finding", async (_name, file, source, rule) => {
    const path = join(dir, file);
    writeFileSync(path, source);
    const r = await ratchet(["review", path, "--json"], { cwd: dir });
    expect(r.status, r.stderr).toBe(9);
    const report = JSON.parse(r.stdout) as { findings: { rule: string; severity: string }[] };
    expect(report.findings.filter((f) => f.severity === "blocking").map((f) => f.rule)).toContain(rule);
  });

  it("the clean controls exit 0", async () => {
    for (const [file, source] of [
      ["clean.py", CLEAN_PY],
      ["clean.mjs", CLEAN_JS],
    ] as const) {
      writeFileSync(join(dir, file), source);
      const r = await ratchet(["review", join(dir, file)], { cwd: dir });
      expect(r.status, `${file}: ${r.stdout}${r.stderr}`).toBe(0);
    }
  });
});
