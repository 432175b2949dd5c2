/**
 * JavaScript/TypeScript symbols from the `typescript` compiler's syntax tree (createSourceFile; no
 * type checking): function declarations, functions assigned to variables, classes, methods,
 * constructors, accessors and function-valued class properties. Pure: the compiler module, a path
 * and the source in, facts out (the module is loaded lazily by the caller).
 */
import type * as TS from "typescript";
import { type DataFact, type FileFacts, type SymbolFact, type SymbolType, sqlTables } from "./facts.js";
import { sig16 } from "./sig.js";

type Ts = typeof TS;

function scriptKind(ts: Ts, path: string): TS.ScriptKind {
  if (path.endsWith(".tsx")) return ts.ScriptKind.TSX;
  if (path.endsWith(".jsx")) return ts.ScriptKind.JSX;
  if (/\.[mc]?js$/.test(path)) return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

type FnLike =
  | TS.FunctionDeclaration
  | TS.FunctionExpression
  | TS.ArrowFunction
  | TS.MethodDeclaration
  | TS.ConstructorDeclaration
  | TS.AccessorDeclaration;

/** Extracts the symbols of one JavaScript or TypeScript file. */
export function typescriptFacts(ts: Ts, path: string, source: string): FileFacts {
  const sf = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true, scriptKind(ts, path));
  const symbols: SymbolFact[] = [];
  const line = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line + 1;

  const isFn = (n: TS.Node | undefined): n is TS.FunctionExpression | TS.ArrowFunction =>
    !!n && (ts.isFunctionExpression(n) || ts.isArrowFunction(n));

  /** True when `child` sits in a type position of `parent` (annotations, type arguments/parameters). */
  const inTypePosition = (parent: TS.Node, child: TS.Node): boolean => {
    const p = parent as unknown as {
      type?: TS.Node;
      typeArguments?: TS.NodeArray<TS.Node>;
      typeParameters?: TS.NodeArray<TS.Node>;
    };
    if (p.type === child) return true;
    if (p.typeArguments?.includes(child) || p.typeParameters?.includes(child)) return true;
    return ts.isTypeNode(child) && !ts.isExpressionWithTypeArguments(child);
  };

  const bindingNames = (n: TS.Node, out: Set<string>): void => {
    if (ts.isIdentifier(n)) out.add(n.text);
    else if (ts.isObjectBindingPattern(n) || ts.isArrayBindingPattern(n))
      for (const e of n.elements) if (ts.isBindingElement(e)) bindingNames(e.name, out);
  };

  const localsOf = (def: TS.Node): Set<string> => {
    const out = new Set<string>();
    const visit = (n: TS.Node): void => {
      if (ts.isParameter(n) || ts.isVariableDeclaration(n)) bindingNames(n.name, out);
      else if (ts.isCatchClause(n) && n.variableDeclaration) bindingNames(n.variableDeclaration.name, out);
      ts.forEachChild(n, visit);
    };
    ts.forEachChild(def, visit);
    return out;
  };

  /** A member of a class body, summarised in the class's signature (name and arity, no body). */
  const memberSummary = (m: TS.ClassElement): string | undefined => {
    const name = m.name && ts.isIdentifier(m.name) ? m.name.text : m.name?.getText(sf);
    if (
      ts.isMethodDeclaration(m) ||
      ts.isGetAccessor(m) ||
      ts.isSetAccessor(m) ||
      ts.isConstructorDeclaration(m)
    )
      return `m:${ts.SyntaxKind[m.kind]}:${name ?? ""}/${m.parameters.length}`;
    if (ts.isPropertyDeclaration(m) && isFn(m.initializer))
      return `m:prop-fn:${name ?? ""}/${m.initializer.parameters.length}`;
    return undefined;
  };

  const serialise = (def: TS.Node, nameNode: TS.Node | undefined, isClass: boolean): string => {
    const locals = isClass ? new Set<string>() : localsOf(def);
    const renamed = new Map<string, number>();
    const parts: string[] = [];
    const visit = (n: TS.Node, parent: TS.Node | undefined): void => {
      if (parent && inTypePosition(parent, n)) return;
      if (ts.isInterfaceDeclaration(n) || ts.isTypeAliasDeclaration(n)) return;
      if (n === nameNode) {
        parts.push("_");
        return;
      }
      if (isClass && parent === def && ts.isClassElement(n)) {
        const summary = memberSummary(n);
        if (summary) {
          parts.push(summary);
          return;
        }
      }
      // Type assertions and non-null marks are annotations: keep the expression only.
      if (
        ts.isAsExpression(n) ||
        ts.isSatisfiesExpression(n) ||
        ts.isTypeAssertionExpression(n) ||
        ts.isNonNullExpression(n)
      ) {
        visit(n.expression, n);
        return;
      }
      if (ts.isIdentifier(n) || ts.isPrivateIdentifier(n)) {
        const t = n.text;
        const isMemberName =
          parent !== undefined &&
          ((ts.isPropertyAccessExpression(parent) && parent.name === n) ||
            (ts.isPropertyAssignment(parent) && parent.name === n));
        if (!isMemberName && locals.has(t)) {
          let i = renamed.get(t);
          if (i === undefined) {
            i = renamed.size;
            renamed.set(t, i);
          }
          parts.push(`$${i}`);
        } else parts.push(`i:${t}`);
        return;
      }
      if (
        ts.isLiteralExpression(n) ||
        ts.isNoSubstitutionTemplateLiteral(n) ||
        ts.isTemplateLiteralToken(n)
      ) {
        parts.push(`${ts.SyntaxKind[n.kind]}:${n.text}`);
        return;
      }
      parts.push(`(${n.kind}`);
      if (ts.isPrefixUnaryExpression(n) || ts.isPostfixUnaryExpression(n)) parts.push(`op${n.operator}`);
      if (ts.isVariableDeclarationList(n))
        parts.push(`f${n.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const)}`);
      if (ts.isArrowFunction(n) || ts.isFunctionLike(n)) {
        const star = (n as { asteriskToken?: TS.Node }).asteriskToken;
        if (star) parts.push("*");
      }
      ts.forEachChild(n, (c) => visit(c, n));
      parts.push(")");
    };
    visit(def, undefined);
    return sig16(parts.join(" "));
  };

  const emit = (
    type: SymbolType,
    path: string[],
    def: TS.Node,
    nameNode: TS.Node | undefined,
    outer: TS.Node,
    fn: FnLike | undefined,
  ): void => {
    const callees = new Set<string>();
    let returns = fn !== undefined && ts.isArrowFunction(fn) && !ts.isBlock(fn.body);
    const locals = type === "class" ? new Set<string>() : localsOf(def);
    const visit = (n: TS.Node): void => {
      if (type === "class" && n !== def && ts.isClassElement(n) && memberSummary(n)) return;
      if (ts.isCallExpression(n) || ts.isNewExpression(n)) {
        const e = n.expression;
        if (ts.isIdentifier(e) && !locals.has(e.text)) callees.add(e.text);
        else if (ts.isPropertyAccessExpression(e)) callees.add(e.name.text);
      } else if (ts.isReturnStatement(n) && n.expression) returns = true;
      ts.forEachChild(n, visit);
    };
    ts.forEachChild(def, visit);
    const bases: string[] = [];
    if (ts.isClassLike(def))
      for (const h of def.heritageClauses ?? [])
        for (const t of h.types) bases.push(t.expression.getText(sf));
    symbols.push({
      type,
      path,
      line_start: line(outer.getStart(sf)),
      line_end: line(Math.max(outer.getStart(sf), outer.end - 1)),
      struct_sig: serialise(def, nameNode, type === "class"),
      params: fn ? fn.parameters.length : 0,
      returns,
      callees: [...callees].sort(),
      bases,
    });
  };

  const nameOf = (n: TS.PropertyName | TS.BindingName | undefined): string | undefined => {
    if (!n) return undefined;
    if (ts.isIdentifier(n) || ts.isPrivateIdentifier(n) || ts.isStringLiteral(n) || ts.isNumericLiteral(n))
      return n.text;
    return undefined;
  };

  const walk = (n: TS.Node, path: string[], inClass: boolean): void => {
    ts.forEachChild(n, (c) => {
      if (ts.isFunctionDeclaration(c)) {
        const name =
          c.name?.text ??
          (c.modifiers?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword) ? "default" : undefined);
        if (name && c.body) {
          const p = [...path, name];
          emit("function", p, c, c.name, c, c);
          walk(c, p, false);
          return;
        }
      } else if (ts.isClassDeclaration(c) || ts.isClassExpression(c)) {
        const decl = ts.isClassExpression(c) && ts.isVariableDeclaration(c.parent) ? c.parent : undefined;
        const name = c.name?.text ?? nameOf(decl?.name) ?? (ts.isClassDeclaration(c) ? "default" : undefined);
        if (name) {
          const p = [...path, name];
          emit("class", p, c, c.name, decl ?? c, undefined);
          walk(c, p, true);
          return;
        }
      } else if (
        inClass &&
        (ts.isMethodDeclaration(c) ||
          ts.isGetAccessor(c) ||
          ts.isSetAccessor(c) ||
          ts.isConstructorDeclaration(c))
      ) {
        const name = ts.isConstructorDeclaration(c) ? "constructor" : nameOf(c.name);
        if (name && c.body) {
          const p = [...path, name];
          emit("method", p, c, ts.isConstructorDeclaration(c) ? undefined : c.name, c, c);
          walk(c, p, false);
          return;
        }
      } else if (inClass && ts.isPropertyDeclaration(c) && isFn(c.initializer)) {
        const name = nameOf(c.name);
        if (name) {
          const p = [...path, name];
          emit("method", p, c, c.name, c, c.initializer);
          walk(c.initializer, p, false);
          return;
        }
      } else if (ts.isVariableDeclaration(c) && isFn(c.initializer)) {
        const name = nameOf(c.name);
        if (name) {
          const p = [...path, name];
          const stmt = c.parent?.parent && ts.isVariableStatement(c.parent.parent) ? c.parent.parent : c;
          emit("function", p, c, c.name, stmt, c.initializer);
          walk(c.initializer, p, false);
          return;
        }
      }
      walk(c, path, false);
    });
  };
  walk(sf, [], false);
  // SQL tables named in string and template literals.
  const data: DataFact[] = [];
  const tables = new Set<string>();
  const scan = (n: TS.Node): void => {
    if (
      ts.isStringLiteral(n) ||
      ts.isNoSubstitutionTemplateLiteral(n) ||
      ts.isTemplateLiteralToken(n) ||
      ts.isTemplateHead(n)
    )
      for (const t of sqlTables(n.text))
        if (!tables.has(t)) {
          tables.add(t);
          const l = line(n.getStart(sf));
          data.push({
            type: "sql_table",
            name: t,
            owner: [],
            line_start: l,
            line_end: line(Math.max(n.getStart(sf), n.end - 1)),
          });
        }
    ts.forEachChild(n, scan);
  };
  scan(sf);
  return { symbols, data };
}
