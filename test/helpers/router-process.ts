/** @module Test helper: router replicas as their own processes (hack/router-process.ts). */
export * from "../../hack/router-process.js";
