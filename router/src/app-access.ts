/**
 * @module Which API key may use which AgentApp, and as whom. An app that
 * names Secrets (`spec.auth`) accepts exactly the keys in them — their
 * SHA-256 digests reach the routers in the app's config, never the keys —
 * and a caller using one acts as that key's id (`secret:<ns>/<Secret>/<key>`),
 * which owns the sessions, programs and responses it creates. An app that
 * names none takes the router's own key file (`INTERLACE_API_KEYS_FILE`,
 * principal per line), as before app keys existed; with no key file either,
 * it is open (a laptop). The router and the endpoint picker both ask here.
 *
 * - no key (or a malformed header) where one is needed: 401;
 * - a key the front door knows (the key file, or any app's keys) that this
 *   app does not accept: 403 — tenant B's key on tenant A's app;
 * - a key nobody knows: 401.
 *
 * A key whose value was rotated in its Secret keeps its old value accepted,
 * as the same id, until the grace window the operator published with it
 * ends (`previous.validUntil`); then the old value is a key nobody knows (401).
 */
import { ErrorCode } from "../../common/src/index.js";
import { appKeyMatches, type AppConfig } from "../../common/src/protocol/index.js";
import { ANONYMOUS, apiKeyDigest, bearerToken, MALFORMED_AUTHORIZATION, MISSING_KEY, type ApiKeys } from "../../common/src/security/http-auth.js";
import { HttpError } from "./errors.js";

const unauthorized = (message: string): HttpError => new HttpError(401, ErrorCode.Unauthorized, message, { "WWW-Authenticate": 'Bearer realm="interlace"' });
const forbidden = (message: string): HttpError => new HttpError(403, ErrorCode.Forbidden, message);

export class AppAccess {
  /**
   * @param keys the front door's key file (null: none configured).
   * @param apps every app config it serves (to tell another tenant's key, a 403, from an unknown one, a 401).
   */
  constructor(
    private readonly keys: ApiKeys | null,
    private readonly apps: () => Iterable<AppConfig>,
  ) {}

  /**
   * The principal acting on `app` (undefined: a route of no app) with this
   * `Authorization` header value; throws the 401 or 403 to answer.
   */
  principal(app: AppConfig | undefined, authorization: string | undefined): string {
    const scoped = app?.auth;
    if (scoped === undefined && this.keys === null) return ANONYMOUS;
    const token = bearerToken(authorization);
    if (token === undefined) throw unauthorized(MISSING_KEY);
    if (token === null) throw unauthorized(MALFORMED_AUTHORIZATION);
    const digest = apiKeyDigest(token);
    if (scoped !== undefined) {
      const now = Date.now();
      const own = scoped.keys.find((k) => appKeyMatches(k, digest, now));
      if (own !== undefined) return own.id;
    } else {
      const principal = this.keys?.get(digest);
      if (principal !== undefined) return principal;
    }
    if (!this.known(digest)) throw unauthorized("the bearer token is not a known API key");
    throw forbidden(
      app === undefined
        ? "this API key is scoped to AgentApps (spec.auth): it may use only their routes"
        : `this API key may not use AgentApp ${app.namespace}/${app.name}${scoped !== undefined ? " (not in the Secrets its spec.auth names)" : " (the app takes the router's API keys; this key belongs to another app's spec.auth)"}`,
    );
  }

  private known(digest: string): boolean {
    if (this.keys?.has(digest) === true) return true;
    const now = Date.now();
    for (const app of this.apps()) if (app.auth?.keys.some((k) => appKeyMatches(k, digest, now)) === true) return true;
    return false;
  }
}
