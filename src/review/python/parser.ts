/**
 * The Python parser: web-tree-sitter with the tree-sitter-python grammar, both loaded from wasm
 * files in node_modules. Initialised once, lazily, on the first review of a Python script, and
 * cached for the life of the process (a failed start is not cached, so a later call retries).
 */
import { createRequire } from "node:module";
import type { Parser } from "web-tree-sitter";
import { ErrorCode, RatchetError } from "../../core/index.js";
import { type PyNode, toPlainTree } from "./tree.js";

let parser: Promise<Parser> | undefined;

async function start(): Promise<Parser> {
  const require = createRequire(import.meta.url);
  const { Parser: TreeSitter, Language } = await import("web-tree-sitter");
  // Located explicitly so that the bundled CLI finds the runtime's wasm wherever it is loaded from.
  const runtimeWasm = require.resolve("web-tree-sitter/web-tree-sitter.wasm");
  await TreeSitter.init({ locateFile: () => runtimeWasm });
  const python = await Language.load(require.resolve("tree-sitter-python/tree-sitter-python.wasm"));
  const p = new TreeSitter();
  p.setLanguage(python);
  return p;
}

/** The shared Python parser. @throws RatchetError `internal` when the grammar cannot be loaded. */
export function pythonParser(): Promise<Parser> {
  parser ??= start().catch((err: unknown) => {
    parser = undefined;
    throw new RatchetError(
      ErrorCode.Internal,
      `cannot load the Python grammar (web-tree-sitter + tree-sitter-python): ${(err as Error).message}`,
      {},
      { cause: err },
    );
  });
  return parser;
}

/** Parses Python source into a plain tree (the wasm tree is freed before returning). */
export async function parsePython(source: string): Promise<PyNode> {
  const p = await pythonParser();
  const tree = p.parse(source);
  if (!tree) throw new RatchetError(ErrorCode.Internal, "tree-sitter returned no tree for the Python source");
  try {
    return toPlainTree(tree, source);
  } finally {
    tree.delete();
  }
}
