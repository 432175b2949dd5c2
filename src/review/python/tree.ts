/**
 * A plain-object copy of a tree-sitter syntax tree. The wasm tree is walked once with a cursor and
 * freed; everything after works on ordinary objects (cheap to traverse, easy to test, no wasm
 * memory to leak). Pure: takes a tree, returns objects.
 */
import type { Tree } from "web-tree-sitter";

export interface PyNode {
  /** Index in document (pre-)order; unique within one tree. */
  id: number;
  type: string;
  /** False for punctuation and keywords (`(`, `+`, `or`). */
  named: boolean;
  /** The field this node fills in its parent (`function`, `arguments`, `left`…). */
  field: string | null;
  /** UTF-16 offsets into the source, as JavaScript strings count. */
  start: number;
  end: number;
  /** 0-based row and column. */
  row: number;
  column: number;
  /** A node the parser inserted to recover from a syntax error. */
  missing: boolean;
  parent: PyNode | null;
  children: PyNode[];
}

/** Offsets where each line starts, for turning offsets into rows and columns without the parser. */
function lineStarts(source: string): number[] {
  const starts = [0];
  for (let i = source.indexOf("\n"); i !== -1; i = source.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

/**
 * Copies `tree` (parsed from `source`) into plain objects, iteratively so deep trees do not
 * overflow. Comments are dropped, and so are punctuation and keywords that fill no field (`(`,
 * `:`, `def`) unless the tree has errors; operators that fill a field (`+`, `or`, `+=`) stay. Every cursor call crosses into
 * wasm, so the walk asks for as little as it can: type and field ids (names come from the
 * language's tables) and offsets (rows and columns are computed here from the source).
 */
export function toPlainTree(tree: Tree, source: string): PyNode {
  const language = tree.language;
  const types = language.types;
  const fields = language.fields;
  const namedType = new Map<number, boolean>();
  const recovering = tree.rootNode.hasError;
  const starts = lineStarts(source);
  const cursor = tree.walk();
  let row = 0;
  try {
    let id = 0;
    /** The node under the cursor, or undefined when it is not kept. */
    const make = (parent: PyNode | null): PyNode | undefined => {
      const typeId = cursor.nodeTypeId;
      const fieldId = cursor.currentFieldId;
      let named = namedType.get(typeId);
      if (named === undefined) {
        named = recovering ? cursor.nodeIsNamed : language.nodeTypeIsNamed(typeId);
        if (!recovering) namedType.set(typeId, named);
      }
      const type = types[typeId] ?? "ERROR";
      const missing = recovering && cursor.nodeIsMissing;
      // A tree with errors keeps every token: the syntax error is located from them.
      if (type === "comment" || (!recovering && !named && fieldId === 0)) return undefined;
      const start = cursor.startIndex;
      // Nodes arrive in document order, so the row moves forward (back only if a recovered tree
      // is ever out of order).
      while (row + 1 < starts.length && (starts[row + 1] as number) <= start) row++;
      while (row > 0 && (starts[row] as number) > start) row--;
      const node: PyNode = {
        id: id++,
        type,
        named,
        field: fieldId === 0 ? null : (fields[fieldId] ?? null),
        start,
        end: cursor.endIndex,
        row,
        column: start - (starts[row] as number),
        missing,
        parent,
        children: [],
      };
      parent?.children.push(node);
      return node;
    };
    const root = make(null) as PyNode;
    // Depth-first: into a kept node's children, else on to the next sibling, else back up.
    let parent = root;
    let descend = cursor.gotoFirstChild();
    while (descend) {
      const node = make(parent);
      if (node && cursor.gotoFirstChild()) {
        parent = node;
        continue;
      }
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent() || parent === root) {
          descend = false;
          break;
        }
        parent = parent.parent as PyNode;
      }
    }
    return root;
  } finally {
    cursor.delete();
  }
}

/** Visits every node in document order (pre-order), iteratively. */
export function preorder(root: PyNode, visit: (n: PyNode) => void): void {
  const stack: PyNode[] = [root];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    visit(n);
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i] as PyNode);
  }
}

/** Where a Python syntax error is, and what it is. 0-based row and column. */
export interface PySyntaxError {
  row: number;
  column: number;
  message: string;
}

const OPENERS: Record<string, string> = { "(": ")", "[": "]", "{": "}" };
const CLOSERS = new Set([")", "]", "}"]);
const STATEMENT = /(_statement|_definition|^decorated_definition)$/;

const before = (a: PyNode, b: PyNode | undefined) => !b || a.start < b.start;

/**
 * Locates the syntax error of a tree that has one, the way Python would report it: a missing
 * token, an unexpected token (the first thing in an `ERROR` node that is not a whole statement),
 * an unmatched closing bracket, else an opening bracket that was never closed. Tree-sitter recovers
 * from errors, so the earliest local problem is the one reported.
 */
export function findSyntaxError(root: PyNode, src: string): PySyntaxError | undefined {
  let missing: PyNode | undefined;
  let unexpected: { token: PyNode; error: PyNode } | undefined;
  let unmatched: PyNode | undefined;
  let anyError = false;
  const open: PyNode[] = [];
  preorder(root, (n) => {
    if (n.missing) {
      anyError = true;
      if (before(n, missing)) missing = n;
      return;
    }
    if (n.type === "ERROR") {
      anyError = true;
      const token = n.children.find((c) => !STATEMENT.test(c.type));
      if (n !== root && token && before(token, unexpected?.token)) unexpected = { token, error: n };
    }
    if (n.children.length > 0 || n.named) return;
    if (n.type in OPENERS) open.push(n);
    else if (CLOSERS.has(n.type)) {
      const top = open[open.length - 1];
      if (top && OPENERS[top.type] === n.type) open.pop();
      else if (!unmatched) unmatched = n;
    }
  });
  if (!anyError && !unmatched && open.length === 0) return undefined;
  const at = (n: PyNode, message: string): PySyntaxError => ({ row: n.row, column: n.column, message });
  const exact = [missing, unmatched]
    .filter((n): n is PyNode => n !== undefined)
    .sort((a, b) => a.start - b.start)[0];
  const unclosed = open[open.length - 1];
  // An unexpected token counts first unless it only starts the statement whose bracket never closed.
  const u = unexpected && !(unclosed && unclosed.start < unexpected.error.end) ? unexpected.token : undefined;
  const first = [exact, u].filter((n): n is PyNode => n !== undefined).sort((a, b) => a.start - b.start)[0];
  if (first && first === missing) return at(first, `missing "${first.type}"`);
  if (first && first === unmatched) return at(first, `unmatched "${first.type}"`);
  if (first)
    return at(
      first,
      `unexpected ${JSON.stringify(src.slice(first.start, first.end).split("\n")[0]?.slice(0, 20))}`,
    );
  if (unclosed) return at(unclosed, `"${unclosed.type}" was never closed`);
  const stmt = unexpected?.token ?? root.children.find((c) => !STATEMENT.test(c.type)) ?? root;
  return at(stmt, "invalid syntax");
}

/** The child filling `field`. */
export function field(n: PyNode, name: string): PyNode | undefined {
  return n.children.find((c) => c.field === name);
}

/** Named children. */
export function named(n: PyNode): PyNode[] {
  return n.children.filter((c) => c.named);
}

/** Strips `( … )` around an expression. */
export function unparen(n: PyNode): PyNode {
  let x = n;
  while (x.type === "parenthesized_expression") {
    const inner = named(x)[0];
    if (!inner) break;
    x = inner;
  }
  return x;
}

/** The parent, skipping `( … )`. */
export function parentOf(n: PyNode): PyNode | null {
  let p = n.parent;
  while (p && p.type === "parenthesized_expression") p = p.parent;
  return p;
}

/** The arguments of a call: positional ones in order and keyword ones by name; `hasSplat` for `*a`/`**k`. */
export interface CallArgs {
  positional: PyNode[];
  keywords: Map<string, PyNode>;
  hasSplat: boolean;
  /** How many positional arguments come before the first `*a` (when there is one). */
  beforeSplat?: number;
}

export function callArgs(call: PyNode, src: string): CallArgs {
  const out: CallArgs = { positional: [], keywords: new Map(), hasSplat: false };
  const list = field(call, "arguments");
  if (!list) return out;
  if (list.type !== "argument_list") {
    out.positional.push(list); // f(x for x in y)
    return out;
  }
  for (const a of named(list)) {
    if (a.type === "keyword_argument") {
      const name = field(a, "name");
      const value = field(a, "value");
      if (name && value) out.keywords.set(src.slice(name.start, name.end), value);
    } else if (a.type === "list_splat" || a.type === "dictionary_splat") {
      if (a.type === "list_splat" && out.beforeSplat === undefined) out.beforeSplat = out.positional.length;
      out.hasSplat = true;
    } else out.positional.push(a);
  }
  return out;
}

/** Argument `index`, or the first of the keywords given. */
export function arg(a: CallArgs, index: number, ...keywords: string[]): PyNode | undefined {
  const p = a.positional[index];
  if (p) return p;
  for (const k of keywords) {
    const v = a.keywords.get(k);
    if (v) return v;
  }
  return undefined;
}
