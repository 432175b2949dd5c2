/**
 * `ratchet init --example`: lays out the README's sample plan and workflow in the current folder
 * (`plan.yaml`, `workflows/hello/` with its learned scripts and a `.gitignore` for what runs
 * write, `scripted-model.json` for the scripted model), from the package's `examples/`. Refuses to overwrite a file that differs (nothing
 * written, exit 2 naming it); files already there with the same content are left as they are, so
 * a second call writes nothing and says so.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCode, findAbove, RatchetError } from "../core/index.js";

/** What runs write inside a workflow's folder, kept out of git (a clone stays clean). */
export const EXAMPLE_GITIGNORE = "execution/\nlearnings/*/script_metadata.json\n";

function examplesDir(): string {
  const found = findAbove(import.meta.url, ["examples"], (d) =>
    existsSync(join(d, "workflows", "hello", "workflow.yaml")),
  );
  if (found) return found;
  throw new RatchetError(
    ErrorCode.Internal,
    `the examples were not found above ${fileURLToPath(import.meta.url)}: is examples/ in the package?`,
  );
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** The files the example is made of: target path (relative to `dir`) → content. */
function exampleFiles(): Map<string, Buffer> {
  const src = examplesDir();
  const files = new Map<string, Buffer>();
  files.set("plan.yaml", readFileSync(join(src, "plans", "demo-plan.yaml")));
  files.set("scripted-model.json", readFileSync(join(src, "scripted-model.json")));
  const hello = join(src, "workflows", "hello");
  for (const f of filesUnder(hello)) {
    const rel = relative(hello, f);
    if (rel.startsWith("execution") || rel.endsWith("script_metadata.json")) continue;
    files.set(join("workflows", "hello", rel), readFileSync(f));
  }
  files.set(join("workflows", "hello", ".gitignore"), Buffer.from(EXAMPLE_GITIGNORE));
  return files;
}

/**
 * Writes the example into `dir`; returns the files written and the ones already there unchanged.
 * @throws RatchetError `invalid_value` naming every file that exists with other content (nothing written).
 */
export function layOutExample(dir: string): { written: string[]; unchanged: string[] } {
  const files = exampleFiles();
  const written: string[] = [];
  const unchanged: string[] = [];
  const conflicts: string[] = [];
  for (const [rel, content] of files) {
    const target = join(dir, rel);
    if (!existsSync(target)) written.push(rel);
    else if (statSync(target).isFile() && readFileSync(target).equals(content)) unchanged.push(rel);
    else conflicts.push(rel);
  }
  if (conflicts.length > 0)
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `init --example: ${conflicts.join(", ")} already exist(s) with other content; nothing was written (move them away first)`,
    );
  for (const rel of written) {
    const target = join(dir, rel);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, files.get(rel)!);
  }
  return { written, unchanged };
}
