/** Bounds of the node source: which files are analysed, and how long git may take. */

/** Files larger than this (bytes) are skipped: generated or vendored code, not authored symbols. */
export const MAX_FILE_BYTES = 1024 * 1024;

/** At most this many files are analysed per run; the rest are skipped (in path order) and counted. */
export const MAX_FILES = 20_000;

/** Folders whose files are never analysed (vendored, built or environment code). */
export const SKIPPED_DIRS = [
  "node_modules",
  "vendor",
  "third_party",
  "dist",
  "build",
  ".venv",
  "venv",
  "site-packages",
  "__pycache__",
] as const;

/** Time limit of each git command of a refresh, in ms. */
export const GIT_TIMEOUT_MS = 60_000;

/** Largest git output read (the file list of a big repository), in bytes. */
export const GIT_MAX_BUFFER = 256 * 1024 * 1024;

/**
 * The analyser's revision: part of every parse-cache key, so a change to what the analysers
 * extract or how signatures are computed never reuses facts computed the old way.
 */
export const ANALYZER_REVISION = 3;
