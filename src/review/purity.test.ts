/**
 * Rules and front ends are pure (STYLE.md §2): they import no I/O module and read no clock or
 * environment. Only the parser loader, `reviewFile`, the report cache and the orchestration around
 * them may.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = dirname(fileURLToPath(import.meta.url));
/** Files allowed to do I/O (loading the wasm grammar, reading a script file) or to reach those that do. */
const IO_ALLOWED = new Set(["python/parser.ts", "review-file.ts", "review.ts", "index.ts", "cache.ts"]);
const IO_IMPORT = /from\s+"(node:[^"]+|fs|fs\/promises|path|os|child_process|http|https|net)"|import\("node:/;
const AMBIENT = /\bDate\.now\(|\bnew Date\(|\bMath\.random\(|\bprocess\.(env|cwd|argv)\b/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [relative(ROOT, p)] : [];
  });
}

describe("review purity", () => {
  const pure = sources(ROOT).filter((f) => !IO_ALLOWED.has(f));

  it("covers the rules and both front ends", () => {
    expect(pure).toEqual(
      expect.arrayContaining(["rules/writes.ts", "python/evaluate.ts", "js/evaluate.ts", "values.ts"]),
    );
  });

  it.each(pure)("%s imports no I/O module and reads no clock or environment", (file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    // Strip comments so documentation may mention process.env.
    const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
    expect(code).not.toMatch(IO_IMPORT);
    // Strings name the script's own APIs (`process.env.X` in a fix text); only code counts here.
    const bare = code.replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, '""');
    expect(bare).not.toMatch(AMBIENT);
  });
});
