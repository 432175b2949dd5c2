/**
 * What stays the same between two runs of the same DoD on the same code (pure). The no-progress
 * check compares DoD outputs round to round; pytest (and most runners) print timings, temp folders,
 * object addresses, pids and clock times that differ on every run, so raw outputs never matched and
 * no-progress never fired. Everything here is rewritten to a fixed placeholder before comparing.
 * The result is only ever hashed for that comparison; it is never shown or scored.
 */

/** Placeholders written in place of what varies. */
export const NORMALISED = {
  path: "<path>",
  tmp: "<tmp>",
  addr: "0x<addr>",
  time: "<time>",
  duration: "<duration>",
  pid: "<pid>",
  port: "<port>",
  seed: "<seed>",
} as const;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `[re, replacement]`, applied in order (paths before numbers, clock times before durations). */
const RULES: readonly [RegExp, string][] = [
  // temp folders: /tmp/pytest-of-root/pytest-12/test_x0/f.txt, /tmp/tmpab12cd, macOS /private/var/folders/…/T/…
  [
    /(?:\/private)?\/(?:tmp|var\/tmp|var\/folders\/[^\s/]+\/[^\s/]+\/T)(?:\/[^\s'"`:,;()<>[\]{}]*)?/g,
    NORMALISED.tmp,
  ],
  [/\b0x[0-9a-fA-F]{4,}\b/g, NORMALISED.addr],
  // 2026-12-01T09:23:02.123Z, 2026-12-01 09:23:02,123, 09:23:56
  [/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/g, NORMALISED.time],
  [/\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b/g, NORMALISED.time],
  // node --test: duration_ms: 0.189231 / # duration_ms 130.28
  [/\bduration_ms:? [\d.]+/g, `duration_ms ${NORMALISED.duration}`],
  // 0.12s, (12 ms), 0.003s, 1.2sec, 250µs, 3 seconds
  [/\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds?|µs|us|ns|min|minutes?)\b/g, NORMALISED.duration],
  [/\b(pid|PID|process|Process)([\s=:#]+)\d+\b/g, `$1$2${NORMALISED.pid}`],
  [/\b(localhost|127\.0\.0\.1|\[::1\]|0\.0\.0\.0):\d+\b/g, `$1:${NORMALISED.port}`],
  [/\b(seed)([\s=:]+)\d+\b/gi, `$1$2${NORMALISED.seed}`],
];

/**
 * A DoD output with what varies from run to run replaced by placeholders: the given folders (the
 * worktree, the source, a private temp folder; longest first), temp paths, hex addresses, clock
 * times and dates, durations, pids, local ports and random seeds. Pure.
 */
export function normaliseDodOutput(output: string, paths: readonly (string | undefined)[] = []): string {
  let text = output;
  const folders = paths
    .filter((p): p is string => typeof p === "string" && p.length > 1)
    .map((p) => p.replace(/\/+$/, ""))
    .sort((a, b) => b.length - a.length);
  for (const folder of folders) text = text.replace(new RegExp(escapeRegExp(folder), "g"), NORMALISED.path);
  for (const [re, to] of RULES) text = text.replace(re, to);
  return text;
}
