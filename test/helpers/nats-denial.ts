/**
 * @module How the tests see NATS refuse an identity: a request it may not
 * publish fails with a permissions error (never a hang), and a plain publish
 * or subscribe it may not make is reported asynchronously on the connection.
 * Used by test/operator/tenancy-attacks.test.ts and test/nats/security.test.ts against a local nats-server,
 * and by the real cluster's tenancy step (test/cluster/steps-tenancy.ts),
 * which runs the same functions inside a pod (their source, through
 * `toString()`): so they import nothing and use only their arguments.
 */
import type { NatsConnection } from "@nats-io/transport-node";

/** Whether a request on `subject` is refused by the server's permissions (false: answered, or failed some other way). */
export const denied = async (nc: NatsConnection, subject: string, body = ""): Promise<boolean> => {
  try {
    await nc.request(subject, body, { timeout: 3_000 });
    return false;
  } catch (err) {
    return /permission/i.test(String((err as Error).message) + String((err as { cause?: Error }).cause?.message ?? ""));
  }
};

/** Permission errors the server reports on `nc` from now on (plain publishes and subscriptions are refused asynchronously). */
export const permissionErrors = (nc: NatsConnection): string[] => {
  const errors: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error" && /permission/i.test(String((s as { error?: Error }).error?.message))) errors.push(String((s as { error?: Error }).error?.message));
  })();
  return errors;
};
