/**
 * Names and what they are bound to, per scope (the module, each `def`, each `lambda`; class bodies
 * and comprehensions count as their enclosing scope). Enough of Python's rules to follow aliases
 * (`import os as o`, `from os import environ as E`, `E = os.environ`) and simple assignments
 * (`out = os.environ["STEP_OUTPUT_DIR"]`, `p = Path(out) / "x"`, `p += "/y"`). Pure.
 */
import { field, named, type PyNode, preorder } from "./tree.js";

export type Binding =
  /** `import os.path as p` → `os.path`; `from os import environ as E` → `os.environ`. */
  | { kind: "import"; qname: string; pos: number }
  /** `name = value` (also `:=`, annotated assignments and unpacking of a literal tuple). */
  | { kind: "value"; value: PyNode; pos: number }
  /** `name += value` (`op` is `+=`, `/=`…); `node` is the statement. */
  | { kind: "augment"; value: PyNode; op: string; pos: number; node: PyNode }
  /** `for name in of`, `[… for name in of]`. */
  | { kind: "element"; of: PyNode; pos: number }
  | { kind: "param"; pos: number }
  /** `def name(…)`: calls to it evaluate to what it returns. */
  | { kind: "def"; node: PyNode; pos: number }
  /** Anything review does not follow (`except … as e`, `with … as f`, `def`, unpacking). */
  | { kind: "opaque"; pos: number };

const SCOPE_TYPES = new Set(["module", "function_definition", "lambda"]);
/** Node types that bind names. */
const COLLECTED = new Set([
  "import_statement",
  "import_from_statement",
  "assignment",
  "augmented_assignment",
  "named_expression",
  "for_statement",
  "for_in_clause",
  "as_pattern_target",
  "global_statement",
  "function_definition",
  "class_definition",
  "lambda",
]);

export class Scopes {
  /** scope node id → name → bindings in source order. */
  private readonly table = new Map<number, Map<string, Binding[]>>();
  /** Modules imported with `from m import *`. */
  readonly starImports: string[] = [];
  /** Names declared `global` in each function. */
  private readonly globals = new Map<number, Set<string>>();
  /** `self.out = …` / `config.path = …`: attribute assignments by `object.attribute`, script-wide. */
  private readonly attributes = new Map<string, Binding[]>();

  constructor(
    readonly root: PyNode,
    private readonly src: string,
  ) {
    preorder(root, (n) => this.collect(n));
  }

  private text(n: PyNode): string {
    return this.src.slice(n.start, n.end);
  }

  /** The scope node containing `n` (a `def` itself is contained by its enclosing scope). */
  scope(n: PyNode): PyNode {
    for (let p = n.parent; p; p = p.parent) if (SCOPE_TYPES.has(p.type)) return p;
    return this.root;
  }

  private bind(scope: PyNode, name: string, b: Binding): void {
    const target = this.globals.get(scope.id)?.has(name) ? this.root : scope;
    let names = this.table.get(target.id);
    if (!names) {
      names = new Map();
      this.table.set(target.id, names);
    }
    const list = names.get(name);
    if (list) list.push(b);
    else names.set(name, [b]);
  }

  /** Binds the identifiers of an assignment target (`a`, `a, b`, `(a, [b, c])`). */
  private bindTarget(scope: PyNode, target: PyNode, value: PyNode | undefined, pos: number): void {
    if (target.type === "identifier") {
      this.bind(scope, this.text(target), value ? { kind: "value", value, pos } : { kind: "opaque", pos });
      return;
    }
    if (["pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"].includes(target.type)) {
      const parts = named(target);
      const values =
        value && ["expression_list", "tuple", "list"].includes(value.type) ? named(value) : undefined;
      parts.forEach((p, i) => {
        this.bindTarget(scope, p, values && values.length === parts.length ? values[i] : undefined, pos);
      });
    }
  }

  private collect(n: PyNode): void {
    if (!COLLECTED.has(n.type)) return;
    const scope = this.scope(n);
    switch (n.type) {
      case "import_statement":
        for (const c of named(n)) this.bindImport(scope, c, null, n.end);
        break;
      case "import_from_statement": {
        const mod = field(n, "module_name");
        if (!mod) break;
        const modName = this.text(mod);
        if (n.children.some((c) => c.type === "wildcard_import")) this.starImports.push(modName);
        for (const c of n.children) if (c.field === "name") this.bindImport(scope, c, modName, n.end);
        break;
      }
      case "assignment": {
        const left = field(n, "left");
        let right = field(n, "right");
        // a = b = value: every target gets the innermost value.
        while (right?.type === "assignment") right = field(right, "right");
        if (left?.type === "attribute" && right) this.bindAttribute(left, right, this.statementEnd(n));
        else if (left) this.bindTarget(scope, left, right, this.statementEnd(n));
        break;
      }
      case "augmented_assignment": {
        const left = field(n, "left");
        const right = field(n, "right");
        const op = field(n, "operator");
        if (left?.type === "identifier" && right && op)
          this.bind(scope, this.text(left), {
            kind: "augment",
            value: right,
            op: this.text(op),
            pos: n.end,
            node: n,
          });
        break;
      }
      case "named_expression": {
        const name = field(n, "name");
        const value = field(n, "value");
        if (name && value) this.bind(scope, this.text(name), { kind: "value", value, pos: n.end });
        break;
      }
      case "for_statement":
      case "for_in_clause": {
        const left = field(n, "left");
        const right = field(n, "right");
        if (left && right) this.bindElements(scope, left, right);
        break;
      }
      case "global_statement": {
        const names = this.globals.get(scope.id) ?? new Set<string>();
        for (const c of named(n)) names.add(this.text(c));
        this.globals.set(scope.id, names);
        break;
      }
      case "as_pattern_target": {
        // `with tempfile.TemporaryDirectory() as tmp`: the name holds what the context gives;
        // `except E as e` binds nothing review follows.
        const pattern = n.parent;
        const value = pattern?.parent?.type === "with_item" ? named(pattern)[0] : undefined;
        for (const c of named(n))
          if (c.type === "identifier")
            this.bind(
              scope,
              this.text(c),
              value ? { kind: "value", value, pos: n.end } : { kind: "opaque", pos: n.end },
            );
        break;
      }
      case "function_definition":
      case "class_definition": {
        const name = field(n, "name");
        if (name)
          this.bind(
            scope,
            this.text(name),
            n.type === "function_definition"
              ? { kind: "def", node: n, pos: n.start }
              : { kind: "opaque", pos: n.start },
          );
        if (n.type === "function_definition") this.bindParams(n, field(n, "parameters"));
        break;
      }
      case "lambda":
        this.bindParams(n, field(n, "parameters"));
        break;
    }
  }

  private bindAttribute(target: PyNode, value: PyNode, pos: number): void {
    const obj = field(target, "object");
    const attr = field(target, "attribute");
    if (obj?.type !== "identifier" || !attr) return;
    const key = `${this.text(obj)}.${this.text(attr)}`;
    const list = this.attributes.get(key) ?? [];
    list.push({ kind: "value", value, pos });
    this.attributes.set(key, list);
  }

  /** The value last assigned to `object.attribute` anywhere in the script (`self.out = …`). */
  lookupAttribute(object: string, attribute: string): Binding | undefined {
    const list = this.attributes.get(`${object}.${attribute}`);
    return list?.[list.length - 1];
  }

  /** An assignment's binding takes effect after its statement (so `x = x + "a"` reads the old x). */
  private statementEnd(n: PyNode): number {
    return n.parent?.type === "expression_statement" ? n.parent.end : n.end;
  }

  private bindElements(scope: PyNode, left: PyNode, of: PyNode): void {
    if (left.type === "identifier") this.bind(scope, this.text(left), { kind: "element", of, pos: of.end });
    else for (const c of named(left)) this.bindTarget(scope, c, undefined, of.end);
  }

  private bindParams(fn: PyNode, params: PyNode | undefined): void {
    if (!params) return;
    for (const p of named(params)) {
      const id =
        p.type === "identifier" ? p : (field(p, "name") ?? named(p).find((c) => c.type === "identifier"));
      if (id?.type === "identifier") this.bind(fn, this.text(id), { kind: "param", pos: fn.start });
    }
  }

  private bindImport(scope: PyNode, item: PyNode, from: string | null, pos: number): void {
    if (item.type === "aliased_import") {
      const name = field(item, "name");
      const alias = field(item, "alias");
      if (!name || !alias) return;
      const dotted = this.text(name);
      this.bind(scope, this.text(alias), { kind: "import", qname: from ? `${from}.${dotted}` : dotted, pos });
    } else if (item.type === "dotted_name") {
      const dotted = this.text(item);
      if (from) this.bind(scope, dotted, { kind: "import", qname: `${from}.${dotted}`, pos });
      else {
        // `import os.path` binds `os`.
        const head = dotted.split(".")[0] ?? dotted;
        this.bind(scope, head, { kind: "import", qname: head, pos });
      }
    }
  }

  /**
   * The binding of `name` as seen at `at`: the latest one before `at` in its own scope, else the
   * latest one in an enclosing scope (functions run after the module has been set up).
   */
  lookup(name: string, at: PyNode): Binding | undefined {
    let scope = this.scope(at);
    let own = true;
    for (;;) {
      const list = this.table.get(scope.id)?.get(name);
      if (list?.length) {
        if (!own) return list[list.length - 1];
        for (let i = list.length - 1; i >= 0; i--) {
          const b = list[i] as Binding;
          if (b.pos <= at.start) return b;
        }
      }
      if (scope === this.root) return undefined;
      scope = this.scope(scope);
      own = false;
    }
  }

  /** Function definitions by name in the module scope (for following `main()`). */
  moduleFunction(name: string): PyNode | undefined {
    let found: PyNode | undefined;
    for (const c of named(this.root)) {
      const def = c.type === "decorated_definition" ? field(c, "definition") : c;
      if (def?.type === "function_definition") {
        const n = field(def, "name");
        if (n && this.text(n) === name) found = def;
      }
    }
    return found;
  }
}
