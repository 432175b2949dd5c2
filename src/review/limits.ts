/** Bounds of static review. */

/** Largest script review accepts, in bytes (UTF-8). A learned step script is far smaller. */
export const MAX_SCRIPT_BYTES = 4 * 1024 * 1024;
