/**
 * @module The endpoint picker's ext_proc exchange context for tests that feed
 * it Envoy's messages directly: one app on the router fixtures' pool, no
 * authentication, no owner keys.
 */
import type { AppConfig } from "../../common/src/protocol/index.js";
import type { EndpointPicker } from "../../router/src/picker/endpoint-picker.js";
import type { ExchangeContext } from "../../router/src/picker/ext-proc-exchange.js";
import { PickerMetrics } from "../../router/src/picker/metrics.js";
import { routeRequest } from "../../router/src/picker/picker-request.js";
import { SessionOwners } from "../../router/src/session-owner.js";
import { log, POOL } from "../router/fixtures.js";

export const pool = { namespace: "default", name: POOL };

/** An exchange context placing through `picker` for `app` alone (`metrics`: the picker's own, when the test reads them). */
export function exchangeContext(picker: EndpointPicker, app: AppConfig, metrics = new PickerMetrics()): ExchangeContext {
  const owners = SessionOwners.from(null, undefined);
  return {
    picker,
    route: (req) => routeRequest(req, { pool, owners, app: (ns, name) => (ns === app.namespace && name === app.name ? app : undefined) }),
    authenticate: () => "",
    owners,
    maxBodyBytes: 1 << 20,
    notReadyReason: () => null,
    retryAfterSeconds: 1,
    metrics,
    log,
  };
}
