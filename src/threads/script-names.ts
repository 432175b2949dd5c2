/**
 * Forward references in a script (pure). Monty compiles a name used inside a function body that
 * the module only defines further down as something the host must supply: a call becomes a host
 * call, a bare reference a name lookup — so a helper defined after the function that calls it
 * fails with NameError at run time, although Python runs it. Declaring those names at the top
 * (`name = None`) makes Monty compile them as the module's own globals; the later `def` or
 * assignment fills them in before they are used, as in Python.
 */

export interface ModuleName {
  name: string;
  /** 0-based line of its first module-level definition. */
  line: number;
  kind: "def" | "class" | "assign";
}

interface TopStatement {
  line: number;
  text: string;
}

/** Module-level statements (first line of each), skipping strings, brackets and continuations. */
function topStatements(lines: readonly string[]): TopStatement[] {
  const out: TopStatement[] = [];
  let triple: string | null = null;
  let depth = 0;
  let continued = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const starts = triple === null && depth === 0 && !continued;
    if (starts && /^[^\s#]/.test(line)) out.push({ line: i, text: line });
    // Walk the line: strings, comments and brackets.
    let j = 0;
    while (j < line.length) {
      if (triple !== null) {
        const end = line.indexOf(triple, j);
        if (end < 0) break;
        j = end + 3;
        triple = null;
        continue;
      }
      const ch = line[j]!;
      if (ch === "#") break;
      if (ch === '"' || ch === "'") {
        if (line.startsWith(ch.repeat(3), j)) {
          triple = ch.repeat(3);
          j += 3;
          continue;
        }
        j++;
        while (j < line.length && line[j] !== ch) j += line[j] === "\\" ? 2 : 1;
        j++;
        continue;
      }
      if ("([{".includes(ch)) depth++;
      else if (")]}".includes(ch)) depth = Math.max(0, depth - 1);
      j++;
    }
    continued = triple === null && /\\\s*$/.test(line);
  }
  return out;
}

/** The names the module defines at its top level, first definition each. */
export function moduleNames(code: string): ModuleName[] {
  const seen = new Map<string, ModuleName>();
  for (const s of topStatements(code.split("\n"))) {
    let m = /^(?:async\s+)?def\s+([A-Za-z_]\w*)/.exec(s.text);
    let kind: ModuleName["kind"] = "def";
    if (!m) {
      m = /^class\s+([A-Za-z_]\w*)/.exec(s.text);
      kind = "class";
    }
    if (!m) {
      m = /^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)/.exec(s.text);
      kind = "assign";
    }
    const name = m?.[1];
    if (name && !seen.has(name)) seen.set(name, { name, line: s.line, kind });
  }
  return [...seen.values()];
}

/** Names a function or class body uses before the module defines them (each once, in file order). */
export function forwardNames(code: string): string[] {
  const lines = code.split("\n");
  const tops = topStatements(lines);
  const defined = moduleNames(code);
  const out = new Set<string>();
  for (let k = 0; k < tops.length; k++) {
    const s = tops[k]!;
    if (!/^(?:async\s+def|def|class)\s/.test(s.text)) continue;
    const end = tops[k + 1]?.line ?? lines.length;
    const body = lines.slice(s.line, end).join("\n");
    for (const n of defined) {
      if (n.line <= s.line || out.has(n.name)) continue;
      if (new RegExp(`(?<![\\w.])${n.name}(?!\\w)`).test(body)) out.add(n.name);
    }
  }
  return defined.filter((n) => out.has(n.name)).map((n) => n.name);
}

/**
 * The script with its forward names declared. The declaration goes on the first line when that
 * line is blank or a comment, so line numbers in tracebacks stay the script's own.
 */
export function withForwardNames(code: string): string {
  const names = forwardNames(code);
  if (names.length === 0) return code;
  const decl = names.map((n) => `${n} = None`).join("; ");
  const nl = code.indexOf("\n");
  const first = nl < 0 ? code : code.slice(0, nl);
  if (/^\s*(#.*)?$/.test(first) && !/coding[:=]/.test(first))
    return `${decl}  ${first.trim()}${nl < 0 ? "" : code.slice(nl)}`;
  return `${decl}\n${code}`;
}
