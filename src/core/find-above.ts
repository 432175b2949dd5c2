/**
 * Finding a file shipped with the package from the module that needs it. The same module runs from
 * `src/<area>/` (tests), `dist/<area>/` (the compiled library) and `dist/bundle/` (the bundled CLI),
 * so a fixed relative path does not work: walk up from the module's folder instead.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The first `join(dir, candidate)` that `accept` takes, for `dir` = the folder of `moduleUrl` and
 * up to `maxLevels` of its parents, candidates in order; undefined when none is.
 */
export function findAbove(
  moduleUrl: string,
  candidates: readonly string[],
  accept: (path: string) => boolean,
  maxLevels = 5,
): string | undefined {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (let i = 0; i <= maxLevels; i++) {
    for (const c of candidates) {
      const path = join(dir, c);
      if (accept(path)) return path;
    }
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}
