/**
 * @module The operator runtime: API access, informers and the Lease API come
 * from `@kubernetes/client-node` (KubeConfig, KubernetesObjectApi,
 * CustomObjectsApi, ListWatch/Watch, CoordinationV1Api) and are wrapped here;
 * the work queue, rate limiters, leader election, controllers, the manager and
 * event recording are the operator's own (the library has none of them).
 */
export * from "./errors.js";
export * from "./resource-type.js";
export * from "./kubeconfig.js";
export * from "./kube-client.js";
export * from "./informer.js";
export * from "./rate-limiter.js";
export * from "./work-queue.js";
export * from "./leader-election.js";
export * from "./controller.js";
export * from "./manager.js";
export * from "./event-recorder.js";
export * from "./delay.js";
export * from "./periodic-check.js";
