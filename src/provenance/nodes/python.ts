/**
 * Python symbols from a tree-sitter syntax tree (the plain tree review/ builds: comments and
 * field-less punctuation already dropped): functions, methods and classes with their structural
 * signature and the local facts dataflow is computed from. Pure: a tree and its source in, facts out.
 */
import type { PyNode } from "../../review/index.js";
import { type DataFact, type FileFacts, type SymbolFact, type SymbolType, sqlTables } from "./facts.js";
import { lineOf, lineStarts, sig16 } from "./sig.js";

/** Calls whose result is a dataframe (pandas / polars readers and constructors). */
const DATAFRAME_CALLS = new Set([
  "DataFrame",
  "read_csv",
  "read_parquet",
  "read_json",
  "read_excel",
  "read_sql",
  "read_sql_query",
  "read_table",
  "read_feather",
  "scan_csv",
  "scan_parquet",
  "concat",
]);
/** Module aliases the readers are called on (`pd.read_csv`). */
const FRAME_MODULES = new Set(["pd", "pandas", "pl", "polars", "dd", "gpd"]);
/** Methods of a dataframe that return one. */
const FRAME_METHODS = new Set([
  "merge",
  "join",
  "groupby",
  "agg",
  "assign",
  "filter",
  "query",
  "copy",
  "rename",
  "drop",
  "sort_values",
  "reset_index",
  "pivot_table",
  "with_columns",
  "select",
]);

const DEFS = new Set(["function_definition", "class_definition"]);
const PATTERNS = new Set([
  "pattern_list",
  "tuple_pattern",
  "list_pattern",
  "list_splat_pattern",
  "as_pattern_target",
]);

function field(n: PyNode, name: string): PyNode | undefined {
  return n.children.find((c) => c.field === name);
}

/** The definition inside a (possibly decorated) definition node, or undefined. */
function definitionOf(n: PyNode): PyNode | undefined {
  if (DEFS.has(n.type)) return n;
  if (n.type === "decorated_definition") return field(n, "definition");
  return undefined;
}

/** The docstring statement of a body (its first statement when it is a bare string). */
function docstringOf(body: PyNode | undefined): PyNode | undefined {
  const first = body?.children[0];
  if (
    first?.type === "expression_statement" &&
    first.children.length === 1 &&
    first.children[0]?.type === "string"
  )
    return first;
  return undefined;
}

function identifiersIn(n: PyNode | undefined, text: (n: PyNode) => string, out: Set<string>): void {
  if (!n) return;
  if (n.type === "identifier") out.add(text(n));
  else if (PATTERNS.has(n.type)) for (const c of n.children) identifiersIn(c, text, out);
}

/** Parameter names, in order (identifiers of every parameter form; types and defaults ignored). */
function paramNames(params: PyNode | undefined, text: (n: PyNode) => string): string[] {
  const names: string[] = [];
  for (const p of params?.children ?? []) {
    if (p.type === "identifier") names.push(text(p));
    else if (p.type === "default_parameter" || p.type === "typed_default_parameter") {
      const name = field(p, "name");
      if (name) names.push(text(name));
    } else if (
      p.type === "typed_parameter" ||
      p.type === "list_splat_pattern" ||
      p.type === "dictionary_splat_pattern"
    ) {
      const id = p.children.find((c) => c.type === "identifier");
      if (id) names.push(text(id));
    }
  }
  return names;
}

/** Parameters and names bound inside the definition: the names renamed positionally. */
function localsOf(def: PyNode, text: (n: PyNode) => string): Set<string> {
  const out = new Set<string>(paramNames(field(def, "parameters"), text));
  const stack = [...def.children];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    switch (n.type) {
      case "assignment":
      case "augmented_assignment":
      case "for_statement":
      case "for_in_clause":
        identifiersIn(field(n, "left"), text, out);
        break;
      case "named_expression":
        identifiersIn(field(n, "name"), text, out);
        break;
      case "as_pattern":
        identifiersIn(field(n, "alias"), text, out);
        break;
      case "lambda_parameters":
      case "parameters":
        for (const name of paramNames(n, text)) out.add(name);
        break;
    }
    for (const c of n.children) stack.push(c);
  }
  return out;
}

/** Extracts the symbols of one Python file. */
export function pythonFacts(root: PyNode, source: string): FileFacts {
  const starts = lineStarts(source);
  const text = (n: PyNode) => source.slice(n.start, n.end);
  const symbols: SymbolFact[] = [];

  /** `outer` is the decorated definition when there is one: decorators are part of the structure. */
  const serialise = (def: PyNode, isClass: boolean, outer: PyNode): string => {
    const locals = isClass ? new Set<string>() : localsOf(def, text);
    const renamed = new Map<string, number>();
    const nameNode = field(def, "name");
    const skip = new Set<PyNode>();
    const doc = docstringOf(field(def, "body"));
    if (doc) skip.add(doc);
    const parts: string[] = [];
    const visit = (n: PyNode, inClassBody: boolean): void => {
      if (skip.has(n) || n.type === "type") return;
      if (n === nameNode) {
        parts.push("_");
        return;
      }
      if (inClassBody) {
        const member = definitionOf(n);
        if (member) {
          // A class's signature holds its members' names and arity, not their bodies: a method
          // edit changes the method, not the class.
          const params = field(member, "parameters");
          parts.push(
            `m:${member.type}:${text(field(member, "name") ?? member)}/${paramNames(params, text).length}`,
          );
          return;
        }
      }
      if (n.type === "identifier") {
        const t = text(n);
        if (locals.has(t)) {
          let i = renamed.get(t);
          if (i === undefined) {
            i = renamed.size;
            renamed.set(t, i);
          }
          parts.push(`$${i}`);
        } else parts.push(`i:${t}`);
        return;
      }
      if (n.type === "string_start" || n.type === "string_end") {
        parts.push(n.type);
        return;
      }
      if (n.children.length === 0) {
        parts.push(n.named ? `${n.type}:${text(n)}` : n.type);
        return;
      }
      // Docstrings of nested definitions are dropped too.
      const nestedDoc = DEFS.has(n.type) ? docstringOf(field(n, "body")) : undefined;
      if (nestedDoc) skip.add(nestedDoc);
      // Annotated parameters serialise as their plain forms: an annotation change keeps the signature.
      if (n.type === "typed_parameter") {
        for (const c of n.children) visit(c, false);
        return;
      }
      parts.push(`(${n.type === "typed_default_parameter" ? "default_parameter" : n.type}`);
      const body = isClass && n === field(def, "body");
      for (const c of n.children) visit(c, body);
      parts.push(")");
    };
    visit(outer, false);
    return sig16(parts.join(" "));
  };

  const facts = (def: PyNode, type: SymbolType, path: string[], outer: PyNode): SymbolFact => {
    const callees = new Set<string>();
    let returns = false;
    const locals = type === "class" ? new Set<string>() : localsOf(def, text);
    const stack = [...def.children];
    for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
      if (n.type === "call") {
        const fn = field(n, "function");
        if (fn?.type === "identifier" && !locals.has(text(fn))) callees.add(text(fn));
        else if (fn?.type === "attribute") {
          const attr = field(fn, "attribute");
          if (attr) callees.add(text(attr));
        }
      } else if (n.type === "return_statement" && n.children.some((c) => c.named)) returns = true;
      if (type === "class" && definitionOf(n)) continue;
      for (const c of n.children) stack.push(c);
    }
    let params = paramNames(field(def, "parameters"), text);
    if (type === "method" && (params[0] === "self" || params[0] === "cls")) params = params.slice(1);
    const bases =
      type === "class"
        ? (field(def, "superclasses")?.children ?? [])
            .filter((c) => c.type === "identifier" || c.type === "attribute")
            .map(text)
        : [];
    return {
      type,
      path,
      line_start: lineOf(starts, outer.start),
      line_end: lineOf(starts, Math.max(outer.start, outer.end - 1)),
      struct_sig: serialise(def, type === "class", outer),
      params: params.length,
      returns,
      callees: [...callees].sort(),
      bases,
    };
  };

  const data: DataFact[] = [];
  const at = (n: PyNode) => ({
    line_start: lineOf(starts, n.start),
    line_end: lineOf(starts, Math.max(n.start, n.end - 1)),
  });
  const stringValue = (n: PyNode) =>
    n.children
      .filter((c) => c.type === "string_content")
      .map(text)
      .join("");

  /** Dataframes a function binds from a dataframe-making call, and the columns read through them. */
  const dataOf = (def: PyNode, owner: string[]): void => {
    const frames = new Set<string>();
    const stack = [...(field(def, "body")?.children ?? [])];
    const ordered: PyNode[] = [];
    for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
      if (definitionOf(n)) continue; // a nested definition owns its own
      ordered.push(n);
      for (const c of n.children) stack.push(c);
    }
    ordered.sort((a, b) => a.start - b.start);
    for (const n of ordered) {
      if (n.type === "assignment") {
        const left = field(n, "left");
        const right = field(n, "right");
        const fn = right?.type === "call" ? field(right, "function") : undefined;
        const callee = fn?.type === "attribute" ? field(fn, "attribute") : fn;
        const base = fn?.type === "attribute" ? field(fn, "object") : undefined;
        const baseName = base?.type === "identifier" ? text(base) : undefined;
        const isFrame =
          callee !== undefined &&
          ((baseName !== undefined && FRAME_MODULES.has(baseName) && DATAFRAME_CALLS.has(text(callee))) ||
            (fn?.type === "identifier" && text(fn) === "DataFrame") ||
            (baseName !== undefined && frames.has(baseName) && FRAME_METHODS.has(text(callee))));
        if (left?.type === "identifier" && isFrame && !frames.has(text(left))) {
          frames.add(text(left));
          data.push({ type: "dataframe", name: text(left), owner, ...at(n) });
        }
      } else if (n.type === "subscript") {
        const value = field(n, "value");
        const key = field(n, "subscript");
        if (value?.type === "identifier" && frames.has(text(value)) && key?.type === "string") {
          const name = `${text(value)}.${stringValue(key)}`;
          if (!data.some((d) => d.type === "column" && d.name === name && d.owner === owner))
            data.push({ type: "column", name, owner, ...at(n) });
        }
      }
    }
  };

  const walk = (n: PyNode, path: string[], scope: "module" | "class" | "function"): void => {
    for (const c of n.children) {
      const def = definitionOf(c);
      if (!def) {
        walk(c, path, scope);
        continue;
      }
      const name = field(def, "name");
      if (!name) continue;
      const isClass = def.type === "class_definition";
      const type: SymbolType = isClass ? "class" : scope === "class" ? "method" : "function";
      const p = [...path, text(name)];
      symbols.push(facts(def, type, p, c));
      if (!isClass) dataOf(def, p);
      const body = field(def, "body");
      if (body) walk(body, p, isClass ? "class" : "function");
    }
  };
  walk(root, [], "module");
  const tables = new Set<string>();
  const strings = [root];
  for (let n = strings.pop(); n !== undefined; n = strings.pop()) {
    if (n.type === "string")
      for (const t of sqlTables(stringValue(n)))
        if (!tables.has(t)) {
          tables.add(t);
          data.push({ type: "sql_table", name: t, owner: [], ...at(n) });
        }
    for (let i = n.children.length - 1; i >= 0; i--) strings.push(n.children[i] as PyNode);
  }
  return { symbols, data };
}
