/**
 * @module An engine pod reaches only its own namespace's tool pools. Tenancy
 * on the bus: a runner publishes results only into its own namespace and
 * drops a call whose reply subject is another namespace's, so a call sent
 * across namespaces would wait out its whole deadline for a result that
 * cannot come. The engine refuses such a tool instead (at session creation,
 * and in the executor for any other caller).
 */

/** Why `tool` in `pool` cannot be run by an engine of `namespace`; null when it can. */
export function foreignPoolReason(tool: string, pool: { namespace: string; name: string }, namespace: string): string | null {
  if (pool.namespace === namespace) return null;
  return `tool "${tool}" names pool ${pool.namespace}/${pool.name}, but this engine pod is in namespace "${namespace}": runners answer only into their own namespace, so its result could never arrive (run the engine in "${pool.namespace}", or the pool in "${namespace}")`;
}
