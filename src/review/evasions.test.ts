/**
 * The evasions that defeated the original's line regexes, one snippet each: review follows the
 * syntax tree, so each must still be found, on the line where it happens.
 */
import { describe, expect, it } from "vitest";
import { type RuleId, reviewScript } from "./index.js";

type Case = [name: string, source: string, rule: RuleId, line: number];

const PYTHON: Case[] = [
  ["from os import environ as E", 'from os import environ as E\nx = E.get("VAR_A", "d")\n', "R2", 2],
  ["import os as o", 'import os as o\nx = o.environ.get("MCP_API_URL", "http://x")\n', "R3", 2],
  ["os.getenv with a default", 'import os\nx = os.getenv("VAR_A", "d")\n', "R2", 2],
  ["os.getenv default= keyword", 'import os\nx = os.getenv("VAR_A", default="d")\n', "R2", 2],
  ["getattr(os, 'environ')", 'import os\nx = getattr(os, "environ").get("VAR_A", "d")\n', "R2", 2],
  ["E = os.environ alias", 'import os\nE = os.environ\nx = E.get("STEP_OUTPUT_DIR", ".")\n', "R3", 3],
  ["dict(os.environ)", 'import os\nenv = dict(os.environ)\nx = env.get("VAR_A", "d")\n', "R2", 3],
  ["sys.modules['os']", 'import sys\nx = sys.modules["os"].environ.get("VAR_A", "d")\n', "R2", 2],
  ["or fallback", 'import os\nx = os.environ.get("VAR_A") or "d"\n', "R2", 2],
  ["conditional fallback", 'import os\nx = os.environ["VAR_A"] if "VAR_A" in os.environ else "d"\n', "R2", 2],
  [
    "try/except KeyError",
    'import os\ntry:\n    x = os.environ["VAR_A"]\nexcept KeyError:\n    x = "d"\n',
    "R2",
    3,
  ],
  ["if not x: x = …", 'import os\nx = os.environ.get("VAR_A")\nif not x:\n    x = "d"\n', "R2", 2],
  ["key held in a constant", 'import os\nKEY = "VAR_A"\nx = os.environ.get(KEY, "d")\n', "R2", 3],
  ["from pathlib import Path as P", 'from pathlib import Path as P\nP("out.txt").write_text("x")\n', "R6", 2],
  [
    "import json as j with open()",
    'import json as j\nj.dump({"a": len("x")}, open("o.json", "w"))\n',
    "R6",
    2,
  ],
  ["open(file=…, mode=…)", 'open(file="o.txt", mode="w").close()\n', "R6", 1],
  ["with open(...) as f", 'with open("o.txt", "a") as f:\n    f.write("x")\n', "R6", 1],
  [
    "multi-line open",
    'import os\nf = open(\n    os.path.join(\n        "out",\n        "x.txt",\n    ),\n    "w",\n)\n',
    "R6",
    2,
  ],
  ["mode in a variable", 'MODE = "w"\nopen("o.txt", MODE).close()\n', "R6", 2],
  ["io.open", 'import io\nio.open("o.txt", "w").close()\n', "R6", 2],
  [
    "Path.open('w')",
    'from pathlib import Path\nwith Path("o.txt").open("w") as f:\n    f.write("x")\n',
    "R6",
    2,
  ],
  ["shutil.copy destination", 'import shutil, sys\nshutil.copy(sys.argv[1], "copy.bin")\n', "R6", 2],
  ["os.replace destination", 'import os\nos.replace("a", "b")\n', "R6", 2],
  ["os.makedirs", 'import os\nos.makedirs("cache/x", exist_ok=True)\n', "R6", 2],
  [
    "tainted through assignments",
    'import os\nbase = os.getcwd()\np = os.path.join(base, "o.txt")\nopen(p, "w")\n',
    "R6",
    4,
  ],
  ["string concatenation run path", 'import sys\np = "exec" + "ution/" + sys.argv[1]\n', "R1", 2],
  ["f-string run path", 'import sys\np = f"execution/{sys.argv[1]}/fetch/out.json"\n', "R1", 2],
  ["implicit concatenation", 'p = ("execu" "tion/run-1/" "x.json")\n', "R1", 1],
  [
    "'..' through os.pardir",
    'import os\np = os.path.join(os.environ["STEP_OUTPUT_DIR"], os.pardir, "fetch")\n',
    "R4",
    2,
  ],
  [
    "Path.parents[1]",
    'import os\nfrom pathlib import Path\np = Path(os.environ["STEP_OUTPUT_DIR"]).parents[0] / "x"\n',
    "R4",
    3,
  ],
  ["%-formatted home path", 'import getpass\np = "/home/%s/data/x.csv" % getpass.getuser()\n', "R5", 2],
  ["browser ref in an f-string", 'n = 1\nsel = f"click @e12 then {n}"\n', "R10", 2],
  ["learnings/ through a join", 'import os\nopen(os.path.join("learnings", "s", "main.py"), "w")\n', "R8", 2],
  [
    "path returned by a helper",
    'import os\ndef target(name):\n    return os.path.join("results", name)\nopen(target("x.json"), "w")\n',
    "R6",
    4,
  ],
  ["raise SystemExit before work", 'import os\nraise SystemExit(0)\nprint(os.listdir("."))\n', "R9", 2],
  // Dynamic code (R11) and computed lookups (R12): a learned script has no reason for either.
  ["exec of base64", 'import base64\nexec(base64.b64decode("cHJpbnQoMSk="))\n', "R11", 2],
  ["eval aliased", 'e = eval\ne("1 + 1")\n', "R11", 2],
  ["exec imported under another name", 'from builtins import exec as run\nrun("x = 1")\n', "R11", 2],
  ["exec through __builtins__", 'b = __builtins__\nb.exec("x = 1")\n', "R11", 2],
  [
    "exec through getattr of builtins",
    'import builtins\ngetattr(builtins, "ex" + "ec")("x = 1")\n',
    "R11",
    2,
  ],
  ["compile", 'code = compile("x = 1", "<s>", "exec")\n', "R11", 1],
  ["eval passed on", "import sys\nvals = list(map(eval, sys.argv[1:]))\n", "R11", 2],
  ["__import__ of a computed name", "import sys\nm = __import__(sys.argv[1])\n", "R12", 2],
  [
    "import_module of a computed name",
    'import importlib\nname = "o" + chr(115)\nm = importlib.import_module(name)\n',
    "R12",
    3,
  ],
  ["getattr(os, computed)", "import os, sys\nf = getattr(os, sys.argv[1])\n", "R12", 2],
  ["globals()[…]", 'globals()["x"] = 1\n', "R12", 1],
  ["vars() of the module", "v = vars()\n", "R12", 1],
  ["__builtins__ access", "x = __builtins__.__dict__\n", "R12", 1],
  ["setattr on a module", 'import os\nsetattr(os, "getcwd", lambda: "/")\n', "R12", 2],
  ["sys.modules[computed]", "import sys\nm = sys.modules[sys.argv[1]]\n", "R12", 2],
  ["__subclasses__ escape", "x = ().__class__.__bases__[0].__subclasses__()\n", "R12", 1],
  // A JSON result held in a string and written out (R13); refs held as data (R10).
  [
    "json.dump of json.loads of a literal",
    'import json, os\nwith open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "o.json"), "w") as f:\n    json.dump(json.loads(\'{"answer": 42}\'), f)\n',
    "R13",
    3,
  ],
  [
    "JSON text through a constant",
    'import os\nR = \'{"total": 3, "items": [1, 2, 3]}\'\nopen(os.path.join(os.environ["STEP_OUTPUT_DIR"], "o.json"), "w").write(R)\n',
    "R13",
    3,
  ],
  [
    "builtins namespace through getattr",
    'getattr(getattr(__import__("builtins"), "__dict__"), "get")("exec")("x = 1")\n',
    "R12",
    1,
  ],
  ["__globals__ by getattr", 'def f():\n    pass\ng = getattr(f, "__globals__")\n', "R12", 3],
  [
    "JSON text through os.write",
    'import os\nfd = os.open("x", os.O_RDONLY)\nos.write(fd, b\'{"answer": 42}\')\n',
    "R13",
    3,
  ],
  ["ref in a dict", 'step = {"action": "click", "ref": "e123"}\n', "R10", 1],
  ["ref as a keyword", 'def browser(*a, **k): pass\nbrowser("click", ref="e7")\n', "R10", 2],
  ["ref in JSON text", 'payload = \'{"ref": "e42", "action": "click"}\'\n', "R10", 1],
];

const JAVASCRIPT: Case[] = [
  ["process.env.X ?? …", 'const x = process.env.VAR_A ?? "d";\n', "R2", 1],
  [
    "env imported from node:process",
    'import { env } from "node:process";\nconst x = env.VAR_A || "d";\n',
    "R2",
    2,
  ],
  [
    "destructured process",
    'const { env } = process;\nconst x = env["MCP_API_URL"] ?? "http://x";\n',
    "R3",
    2,
  ],
  ["destructuring default", 'const { VAR_A = "d" } = process.env;\n', "R2", 1],
  ["||= on the environment", 'process.env.VAR_A ||= "d";\n', "R2", 1],
  ["if (!x) x = …", 'let x = process.env.VAR_A;\nif (!x) x = "d";\n', "R2", 1],
  ["named import alias", 'import { writeFileSync as w } from "node:fs";\nw("o.txt", "x");\n', "R6", 2],
  [
    "fs/promises default import",
    'import fsp from "node:fs/promises";\nawait fsp.writeFile("o.txt", "x");\n',
    "R6",
    2,
  ],
  ["dynamic import", 'const fs = await import("fs");\nfs.appendFileSync("o.txt", "x");\n', "R6", 2],
  ["require destructuring", 'const { promises: p } = require("fs");\nawait p.mkdir("cache");\n', "R6", 2],
  ["computed member", 'import fs from "fs";\nfs["writeFileSync"]("o.txt", "x");\n', "R6", 2],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source under review, not a template here
  ["template run path", "const r = process.argv[2];\nconst p = `execution/${r}/x/`;\n", "R1", 2],
  ["concatenated run path", 'const p = "exec" + "ution/" + process.argv[2];\n', "R1", 1],
  ["climbing import specifier", 'import { helper } from "../fetch-data/helper.mjs";\nhelper();\n', "R4", 1],
  [
    "path returned by an arrow function",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source under review
    'import fs from "node:fs";\nconst target = (n) => `results/${n}`;\nfs.writeFileSync(target("x"), "");\n',
    "R6",
    3,
  ],
  ["process.exit(0) before work", 'import fs from "fs";\nprocess.exit(0);\nfs.readFileSync("x");\n', "R9", 2],
  ["eval", 'eval("1 + 1");\n', "R11", 1],
  ["eval aliased", 'const e = eval;\ne("1 + 1");\n', "R11", 2],
  ["indirect eval", '(0, eval)("1 + 1");\n', "R11", 1],
  ["globalThis.eval", 'globalThis["ev" + "al"]("1 + 1");\n', "R11", 1],
  ["new Function", 'const f = new Function("return 1");\n', "R11", 1],
  ["Function()", 'const f = Function("return 1");\n', "R11", 1],
  ["constructor of a constructor", '({}).constructor.constructor("return 1")();\n', "R11", 1],
  ["vm", 'import vm from "node:vm";\nvm.runInNewContext("1 + 1");\n', "R11", 2],
  ["setTimeout with code text", 'setTimeout("x = 1", 10);\n', "R11", 1],
  ["require(computed)", "const m = require(process.argv[2]);\n", "R12", 1],
  ["import(computed)", "const m = await import(process.argv[2]);\n", "R12", 1],
  ["globalThis[computed]", "const f = globalThis[process.argv[2]];\n", "R12", 1],
  ["process.binding", 'const b = process.binding("fs");\n', "R12", 1],
  [
    "JSON text written out",
    'import fs from "node:fs";\nfs.writeFileSync(process.env.STEP_OUTPUT_DIR + "/o.json", \'{"answer": 42}\');\n',
    "R13",
    2,
  ],
  ["Function from an async arrow", 'const F = (async () => {}).constructor;\nnew F("return 1");\n', "R11", 1],
  ["Function.prototype.constructor", 'Function.prototype.constructor("return 1")();\n', "R11", 1],
  [
    "createRequire(computed)",
    'import { createRequire } from "node:module";\nconst req = createRequire(import.meta.url);\nreq(process.argv[2]);\n',
    "R12",
    3,
  ],
  ["module.require(computed)", "module.require(process.argv[2]);\n", "R12", 1],
  ["import of a data: URL", 'await import("data:text/javascript,export default 1");\n', "R11", 1],
  ["ref in an object", 'const step = { action: "click", ref: "e12" };\n', "R10", 1],
];

async function rulesAt(source: string, language: "python" | "javascript", line: number): Promise<string[]> {
  const r = await reviewScript(source, { language });
  return r.findings.filter((f) => f.line === line).map((f) => f.rule);
}

describe("evasions (Python)", () => {
  it.each(PYTHON)("%s", async (_name, source, rule, line) => {
    expect(await rulesAt(source, "python", line)).toContain(rule);
  });
});

describe("evasions (JavaScript)", () => {
  it.each(JAVASCRIPT)("%s", async (_name, source, rule, line) => {
    expect(await rulesAt(source, "javascript", line)).toContain(rule);
  });
});
