/** `GET /openapi.json`: the built-in routes plus what mounted route groups described. */
import type { RouteGroup } from "../app.js";
import { openApiDocument } from "../openapi.js";

export const openapiRoutes: RouteGroup = (app, kit) => {
  // Built on the first request: groups mounted after this one describe their paths later.
  let doc: Record<string, unknown> | undefined;
  app.get("/openapi.json", (c) => {
    doc ??= openApiDocument(kit.described);
    return c.json(doc);
  });
};
