import { describe, expect, it } from "vitest";
import { factsOf } from "./analyze.js";
import type { SymbolFact } from "./facts.js";

async function py(src: string): Promise<SymbolFact[]> {
  return (await factsOf("python", "m.py", src)).symbols;
}
async function ts(src: string, path = "m.ts"): Promise<SymbolFact[]> {
  return (await factsOf("typescript", path, src)).symbols;
}
const sigOf = (syms: SymbolFact[], name: string) => syms.find((s) => s.path.join(".") === name)?.struct_sig;

describe("Python struct_sig", () => {
  const base = [
    "def split(rows, ratio=0.8):",
    '    """Split rows."""',
    "    n = int(len(rows) * ratio)",
    "    # the head is training data",
    "    return rows[:n], rows[n:]",
    "",
  ].join("\n");

  it("extracts functions, methods, nested functions and classes with 1-based lines", async () => {
    const syms = await py(
      [
        "class Model(Base):",
        "    def fit(self, x):",
        "        def inner(y):",
        "            return y",
        "        return inner(x)",
        "",
        "def top():",
        "    pass",
        "",
      ].join("\n"),
    );
    expect(syms.map((s) => [s.type, s.path.join("."), s.line_start, s.line_end])).toEqual([
      ["class", "Model", 1, 5],
      ["method", "Model.fit", 2, 5],
      ["function", "Model.fit.inner", 3, 4],
      ["function", "top", 7, 8],
    ]);
    expect(syms[0]?.bases).toEqual(["Base"]);
    expect(syms[1]).toMatchObject({ params: 1, returns: true, callees: ["inner"] });
  });

  it("a rename (function, parameters, locals) keeps it", async () => {
    const renamed = base
      .replace("def split(rows, ratio", "def cut(items, frac")
      .replaceAll("rows", "items")
      .replaceAll("ratio", "frac")
      .replaceAll("n =", "k =")
      .replaceAll("[:n]", "[:k]")
      .replaceAll("[n:]", "[k:]");
    expect(renamed).toContain("def cut(items, frac=0.8)");
    expect(sigOf(await py(renamed), "cut")).toBe(sigOf(await py(base), "split"));
  });

  it("a reformat, a comment, a docstring or an annotation change keeps it", async () => {
    const reformatted = [
      "def split(",
      "    rows: list[dict],",
      "    ratio: float = 0.8,",
      ") -> tuple:",
      "    '''Another docstring entirely.'''",
      "    n = int( len( rows ) * ratio )  # count",
      "    return (rows[:n], rows[n:]) if False else rows[:n], rows[n:]",
      "",
    ].join("\n");
    // The last line differs on purpose below; first check pure reformat + annotations.
    const pure = [
      "def split(rows: list, ratio: float = 0.8) -> tuple:",
      "    n = int(  len(rows)*ratio )",
      "    return rows[:n], rows[n:]",
      "",
    ].join("\n");
    const s = sigOf(await py(base), "split");
    expect(sigOf(await py(pure), "split")).toBe(s);
    expect(sigOf(await py(reformatted), "split")).not.toBe(s);
  });

  it("a body edit changes it", async () => {
    const s = sigOf(await py(base), "split");
    expect(sigOf(await py(base.replace("* ratio", "* ratio + 1")), "split")).not.toBe(s);
    expect(sigOf(await py(base.replace("rows[n:]", "rows[n + 1:]")), "split")).not.toBe(s);
  });

  it("edits a determined caller might hope to slip past it: swapped operands, a decorator, a literal", async () => {
    const f = "@cache\ndef f(a, b):\n    return a - b if a > 0 else 'neg'\n";
    const s = sigOf(await py(f), "f");
    expect(sigOf(await py(f.replace("a - b", "b - a")), "f")).not.toBe(s);
    expect(sigOf(await py(f.replace("@cache\n", "")), "f")).not.toBe(s);
    expect(sigOf(await py(f.replace("'neg'", "'NEG'")), "f")).not.toBe(s);
    expect(sigOf(await py(f.replace("a > 0", "a >= 0")), "f")).not.toBe(s);
    expect(sigOf(await py(f.replace("'neg'", '"neg"')), "f")).toBe(s);
  });

  it("a method body edit changes the method, not its class", async () => {
    const cls = ["class A:", "    def f(self):", "        return 1", ""].join("\n");
    const a = await py(cls);
    const b = await py(cls.replace("return 1", "return 2"));
    expect(sigOf(b, "A")).toBe(sigOf(a, "A"));
    expect(sigOf(b, "A.f")).not.toBe(sigOf(a, "A.f"));
  });

  it("renaming a global the body reads changes it (only parameters and locals are renamed)", async () => {
    const a = "def f(x):\n    return LIMIT + x\n";
    expect(sigOf(await py(a), "f")).not.toBe(sigOf(await py(a.replace("LIMIT", "CAP")), "f"));
  });
});

describe("TypeScript/JavaScript struct_sig", () => {
  const base = [
    "/** Split rows. */",
    "export function split(rows: Row[], ratio: number = 0.8): [Row[], Row[]] {",
    "  // the head is training data",
    "  const n = Math.floor(rows.length * ratio) as number;",
    "  return [rows.slice(0, n), rows.slice(n)];",
    "}",
    "",
  ].join("\n");

  it("extracts functions, arrow functions, classes, methods, constructors and property functions", async () => {
    const syms = await ts(
      [
        "export class Model extends Base {",
        "  constructor(private x: number) { super(); }",
        "  fit(y: number): number { const inner = (z: number) => z; return inner(y); }",
        "  onClick = () => { this.fit(1); };",
        "}",
        "const helper = function () { return 1; };",
        "export default function () {}",
        "",
      ].join("\n"),
    );
    expect(syms.map((s) => [s.type, s.path.join("."), s.line_start, s.line_end])).toEqual([
      ["class", "Model", 1, 5],
      ["method", "Model.constructor", 2, 2],
      ["method", "Model.fit", 3, 3],
      ["function", "Model.fit.inner", 3, 3],
      ["method", "Model.onClick", 4, 4],
      ["function", "helper", 6, 6],
      ["function", "default", 7, 7],
    ]);
    expect(syms[0]?.bases).toEqual(["Base"]);
  });

  it("a rename keeps it", async () => {
    const renamed = base
      .replace("function split", "function cut")
      .replaceAll("rows", "items")
      .replaceAll("ratio", "frac")
      .replaceAll("n)", "k)")
      .replace("const n", "const k")
      .replace("(0, n)", "(0, k)");
    expect(sigOf(await ts(renamed), "cut")).toBe(sigOf(await ts(base), "split"));
  });

  it("a reformat, comments, JSDoc and type annotations/assertions do not change it", async () => {
    const plain = [
      "export function split(rows, ratio = 0.8) {",
      "  const n = Math.floor(",
      "    rows.length * ratio",
      "  );",
      "  return [rows.slice(0, n), rows.slice(n)];",
      "}",
      "",
    ].join("\n");
    expect(sigOf(await ts(plain), "split")).toBe(sigOf(await ts(base), "split"));
    expect(sigOf(await ts(plain, "m.js"), "split")).toBe(sigOf(await ts(base), "split"));
  });

  it("edits a determined caller might hope to slip past it: operators, swapped operands, unary signs, decorators", async () => {
    const f = "class K {\n  @log\n  m(a: number, b: number) {\n    return a === b ? a - b : -a;\n  }\n}\n";
    const s = sigOf(await ts(f), "K.m");
    for (const edit of [
      f.replace("===", "!=="),
      f.replace("a - b", "b - a"),
      f.replace("-a;", "+a;"),
      f.replace("  @log\n", ""),
    ])
      expect(sigOf(await ts(edit), "K.m"), edit).not.toBe(s);
    expect(
      sigOf(
        await ts(
          f
            .replace("(a: number, b: number)", "(x, y)")
            .replace("a === b ? a - b : -a", "x === y ? x - y : -x"),
        ),
        "K.m",
      ),
    ).toBe(s);
  });

  it("a body edit changes it", async () => {
    const s = sigOf(await ts(base), "split");
    expect(sigOf(await ts(base.replace("* ratio", "* ratio + 1")), "split")).not.toBe(s);
    expect(sigOf(await ts(base.replace("const n", "let n")), "split")).not.toBe(s);
    expect(sigOf(await ts(base.replace("rows.slice(n)", "rows.slice(-n)")), "split")).not.toBe(s);
  });
});
