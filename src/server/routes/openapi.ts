/** `GET /openapi.json`: the built-in routes plus what mounted route groups described. */
import type { RouteGroup } from "../app.js";
import { openApiDocument, openApiExtras } from "../openapi.js";

export const openapiRoutes: RouteGroup = (app) => {
  // Built on the first request: groups mounted after this one describe their paths later.
  let doc: Record<string, unknown> | undefined;
  app.get("/openapi.json", (c) => {
    doc ??= openApiDocument(openApiExtras.get(app) ?? {});
    return c.json(doc);
  });
};
