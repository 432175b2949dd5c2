/**
 * The dashboard: a fixed set of built files (`npm run build` writes them to `dist/web/`). Only the
 * names in {@link FILES} are served; any other path is 404, so no request names a file on disk.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Context } from "hono";
import type { RouteGroup } from "../app.js";
import { replyCode } from "../http.js";

const FILES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
  "favicon.svg": "image/svg+xml",
};

/** The folder of the built dashboard: beside the bundle, or `dist/web` from the sources. */
export function webDir(): string | undefined {
  for (const rel of ["../web/", "../../dist/web/", "../../../dist/web/"]) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(`${dir}index.html`)) return dir;
  }
  return undefined;
}

export const staticRoutes: RouteGroup = (app) => {
  const dir = webDir();
  const cache = new Map<string, string>();
  const serve = (name: string) => (c: Context) => {
    if (!dir) return replyCode(c, "not_found", "the dashboard is not built: run npm run build");
    let body = cache.get(name);
    if (body === undefined) {
      body = readFileSync(`${dir}${name}`, "utf8");
      cache.set(name, body);
    }
    return c.body(body, 200, {
      "content-type": FILES[name]!,
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
      ...(name === "index.html"
        ? { "content-security-policy": "default-src 'self'; style-src 'self'; img-src 'self' data:" }
        : {}),
    });
  };
  app.get("/", serve("index.html"));
  for (const name of Object.keys(FILES)) app.get(`/${name}`, serve(name));
  // Browsers ask for /favicon.ico whatever the page links: send them to the icon there is.
  app.get("/favicon.ico", (c) => c.redirect("/favicon.svg", 301));
};
