/**
 * @module Tool-schema normalisation, as the CML module names it: the one
 * implementation lives with the wire schemas in `common/src/wire/` so the
 * engine, the HTTP layer and the tool runner validate against the same schema.
 */
export { normalizeSchema, propertyOrder, resolveTypeAlias } from "../../../common/src/wire/tool-schema.js";
