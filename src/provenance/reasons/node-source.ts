/** The reasons area, the headline and `why` read nodes through the provenance-wide seam. */
export { nodeSourceFor, useNodeSource } from "../node-source.js";
