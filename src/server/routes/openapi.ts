/** `GET /openapi.json`. */
import type { RouteGroup } from "../app.js";
import { openApiDocument } from "../openapi.js";

export const openapiRoutes: RouteGroup = (app) => {
  const doc = openApiDocument();
  app.get("/openapi.json", (c) => c.json(doc));
};
