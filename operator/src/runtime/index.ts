/**
 * @module The operator runtime: REST client, informers, work queue, rate
 * limiters, leader election, controllers, the manager and event recording.
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
