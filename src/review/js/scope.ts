/**
 * The JavaScript syntax tree indexed for review (parents, ids, document order) and the names each
 * scope binds: imports (`import { writeFileSync as w } from "node:fs"`), `require`, declarations,
 * destructuring (`const { env } = process`), assignments, `for … of`, parameters. Function bodies
 * are scopes; blocks are not (close enough for aliases). Pure.
 */
import type { AnyNode, Expression, Pattern, Program } from "acorn";
import { base } from "acorn-walk";

export type JsBinding =
  | { kind: "import"; qname: string; pos: number }
  | { kind: "value"; value: Expression; pos: number }
  /** `const { key: name } = object`. */
  | { kind: "member"; object: Expression; key: string; pos: number }
  | { kind: "augment"; value: Expression; pos: number; node: AnyNode }
  | { kind: "element"; of: Expression; pos: number }
  | { kind: "param"; pos: number }
  /** `function name(…) {…}`: calls to it evaluate to what it returns. */
  | { kind: "def"; node: AnyNode; pos: number }
  | { kind: "opaque"; pos: number };

const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

/** `node:fs` → `fs`, `fs/promises` → `fs.promises`, `fs-extra` → `fs`, `path/posix` → `path`. */
export function moduleName(spec: string): string {
  const s = spec.replace(/^node:/, "");
  if (s === "fs/promises") return "fs.promises";
  if (s === "fs-extra") return "fs";
  if (s === "path/posix" || s === "path/win32") return "path";
  return s.replace(/\//g, ".");
}

/**
 * The index kept on each node (parent and document-order id). Stored on the parsed nodes
 * themselves, which review owns: property reads are far cheaper than map lookups on big scripts.
 */
interface Indexed {
  __reviewId?: number;
  __reviewParent?: AnyNode | null;
}

/** acorn-walk's base walkers, called with the override type they pass (`"Expression"`, `"Pattern"`). */
type Walker = (
  node: AnyNode,
  state: AnyNode,
  c: (child: AnyNode, state: AnyNode, override?: string) => void,
) => void;
const WALKERS = base as unknown as Record<string, Walker | undefined>;

export class JsTree {
  /** Every node in document order (a node before its children). */
  readonly nodes: AnyNode[] = [];
  private readonly table = new Map<AnyNode, Map<string, JsBinding[]>>();
  /** `this.out = …` / `cfg.path = …` / class fields: by `object.property`, script-wide. */
  private readonly attributes = new Map<string, JsBinding[]>();

  constructor(readonly program: Program) {
    // Pre-order walk over acorn-walk's base walkers. A node can be entered again under another
    // type ("Expression" → its own type); it is indexed the first time, when `parent` is its parent.
    const visit = (node: AnyNode, parent: AnyNode | null, override?: string): void => {
      const n = node as AnyNode & Indexed;
      if (n.__reviewId === undefined) {
        n.__reviewId = this.nodes.length;
        n.__reviewParent = parent;
        this.nodes.push(node);
      }
      WALKERS[override ?? node.type]?.(node, node, visit);
    };
    visit(program, null);
    for (const n of this.nodes) this.collect(n);
  }

  id(n: AnyNode): number {
    return (n as AnyNode & Indexed).__reviewId ?? -1;
  }

  parent(n: AnyNode): AnyNode | null {
    return (n as AnyNode & Indexed).__reviewParent ?? null;
  }

  /** The function (or the program) whose scope contains `n`. */
  scope(n: AnyNode): AnyNode {
    for (let p = this.parent(n); p; p = this.parent(p))
      if (FUNCTIONS.has(p.type) || p.type === "Program") return p;
    return this.program;
  }

  private bind(scope: AnyNode, name: string, b: JsBinding): void {
    let names = this.table.get(scope);
    if (!names) {
      names = new Map();
      this.table.set(scope, names);
    }
    const list = names.get(name);
    if (list) list.push(b);
    else names.set(name, [b]);
  }

  private bindPattern(
    scope: AnyNode,
    p: Pattern,
    init: Expression | null | undefined,
    pos: number,
    param = false,
  ): void {
    if (p.type === "Identifier") {
      this.bind(
        scope,
        p.name,
        param ? { kind: "param", pos } : init ? { kind: "value", value: init, pos } : { kind: "opaque", pos },
      );
    } else if (p.type === "AssignmentPattern") {
      this.bindPattern(scope, p.left, param ? undefined : init, pos, param);
    } else if (p.type === "ObjectPattern") {
      for (const prop of p.properties) {
        if (prop.type === "RestElement") {
          this.bindPattern(scope, prop.argument, undefined, pos, param);
          continue;
        }
        const key =
          prop.key.type === "Identifier" && !prop.computed
            ? prop.key.name
            : prop.key.type === "Literal"
              ? String(prop.key.value)
              : undefined;
        const target = prop.value.type === "AssignmentPattern" ? prop.value.left : prop.value;
        if (target.type === "Identifier" && key && init && !param)
          this.bind(scope, target.name, { kind: "member", object: init, key, pos });
        else this.bindPattern(scope, prop.value, undefined, pos, param);
      }
    } else if (p.type === "ArrayPattern") {
      for (const el of p.elements) if (el) this.bindPattern(scope, el, undefined, pos, param);
    } else if (p.type === "RestElement") this.bindPattern(scope, p.argument, undefined, pos, param);
  }

  private collect(n: AnyNode): void {
    const scope = this.scope(n);
    switch (n.type) {
      case "ImportDeclaration": {
        const mod = moduleName(String(n.source.value));
        for (const s of n.specifiers) {
          const imported =
            s.type === "ImportSpecifier"
              ? s.imported.type === "Identifier"
                ? s.imported.name
                : String(s.imported.value)
              : "default";
          const qname = imported === "default" ? mod : `${mod}.${imported}`;
          this.bind(scope, s.local.name, { kind: "import", qname, pos: 0 });
        }
        break;
      }
      case "VariableDeclarator": {
        const decl = this.parent(n);
        const loop = decl && this.parent(decl);
        if (
          loop &&
          (loop.type === "ForOfStatement" || loop.type === "ForInStatement") &&
          loop.left === decl
        ) {
          if (n.id.type === "Identifier")
            this.bind(
              scope,
              n.id.name,
              loop.type === "ForOfStatement"
                ? { kind: "element", of: loop.right, pos: loop.right.end }
                : { kind: "opaque", pos: loop.right.end },
            );
          else this.bindPattern(scope, n.id, undefined, loop.right.end);
        } else this.bindPattern(scope, n.id, n.init, n.end);
        break;
      }
      case "PropertyDefinition":
        if (n.value && n.key.type === "Identifier" && !n.computed)
          this.bindAttribute("this", n.key.name, n.value, n.end);
        break;
      case "AssignmentExpression":
        if (
          n.operator === "=" &&
          n.left.type === "MemberExpression" &&
          !n.left.computed &&
          n.left.property.type === "Identifier"
        ) {
          const o = n.left.object;
          const obj = o.type === "ThisExpression" ? "this" : o.type === "Identifier" ? o.name : undefined;
          if (obj) this.bindAttribute(obj, n.left.property.name, n.right, n.end);
        }
        if (n.left.type === "Identifier") {
          if (n.operator === "=")
            this.bind(scope, n.left.name, { kind: "value", value: n.right, pos: n.end });
          else if (n.operator === "+=")
            this.bind(scope, n.left.name, { kind: "augment", value: n.right, pos: n.end, node: n });
        } else if (n.operator === "=" && n.left.type === "ObjectPattern")
          this.bindPattern(scope, n.left, n.right, n.end);
        break;
      case "FunctionDeclaration":
      case "FunctionExpression":
      case "ArrowFunctionExpression":
        if (n.type === "FunctionDeclaration" && n.id)
          this.bind(scope, n.id.name, { kind: "def", node: n, pos: scope.start });
        for (const p of n.params) this.bindPattern(n, p, undefined, n.start, true);
        break;
      case "ClassDeclaration":
        if (n.id) this.bind(scope, n.id.name, { kind: "opaque", pos: n.start });
        break;
      case "CatchClause":
        if (n.param) this.bindPattern(scope, n.param, undefined, n.start);
        break;
    }
  }

  private bindAttribute(object: string, property: string, value: Expression, pos: number): void {
    const key = `${object}.${property}`;
    const list = this.attributes.get(key) ?? [];
    list.push({ kind: "value", value, pos });
    this.attributes.set(key, list);
  }

  /** The value last assigned to `object.property` anywhere in the script (`this.out = …`). */
  lookupAttribute(object: string, property: string): JsBinding | undefined {
    const list = this.attributes.get(`${object}.${property}`);
    return list?.[list.length - 1];
  }

  /** The binding of `name` as seen at `at` (latest before it in its own scope, else the latest outside). */
  lookup(name: string, at: AnyNode): JsBinding | undefined {
    let scope: AnyNode = this.scope(at);
    let own = true;
    for (;;) {
      const list = this.table.get(scope)?.get(name);
      if (list?.length) {
        if (!own) return list[list.length - 1];
        for (let i = list.length - 1; i >= 0; i--) {
          const b = list[i] as JsBinding;
          if (b.pos <= at.start) return b;
        }
      }
      if (scope === this.program) return undefined;
      scope = this.scope(scope);
      own = false;
    }
  }

  /** A function declared at the top level (or `const main = async () => …`), for following `main()`. */
  moduleFunction(name: string): AnyNode | undefined {
    for (const s of this.program.body) {
      const d = s.type === "ExportNamedDeclaration" && s.declaration ? s.declaration : s;
      if (d.type === "FunctionDeclaration" && d.id?.name === name) return d;
      if (d.type === "VariableDeclaration")
        for (const v of d.declarations)
          if (
            v.id.type === "Identifier" &&
            v.id.name === name &&
            v.init &&
            (v.init.type === "ArrowFunctionExpression" || v.init.type === "FunctionExpression")
          )
            return v.init;
    }
    return undefined;
  }
}
