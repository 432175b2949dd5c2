/** Parsing JavaScript step scripts (`main.mjs`) with acorn: latest syntax, ES module. Pure. */
import { type Program, parse } from "acorn";

export interface JsSyntaxError {
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  message: string;
}

/** Parses `source`; a syntax error is a value, not an exception. */
export function parseJavaScript(source: string): { program: Program } | { error: JsSyntaxError } {
  try {
    const program = parse(source, {
      ecmaVersion: "latest",
      sourceType: "module",
      locations: true,
      allowHashBang: true,
      allowReturnOutsideFunction: true,
    });
    return { program };
  } catch (err) {
    const e = err as SyntaxError & { loc?: { line: number; column: number } };
    if (!(e instanceof SyntaxError) || !e.loc) throw err;
    return {
      error: {
        line: e.loc.line,
        column: e.loc.column + 1,
        message: e.message.replace(/\s*\(\d+:\d+\)$/, ""),
      },
    };
  }
}
