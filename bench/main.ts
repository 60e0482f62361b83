/**
 * @module `npm run bench -- <suite> [flags]`: benchmarks live apart from the
 * tests. Each suite is a module under bench/ exporting `run(argv)`; it prints a
 * table and, with `--json FILE`, writes its results as JSON.
 */
const suites: Record<string, () => Promise<{ run(argv: string[]): Promise<void> }>> = {
  engine: () => import("./engine/main.js"),
  nats: () => import("./nats/main.js"),
  bfcl: () => import("./bfcl/main.js"),
  facts: () => import("./facts/main.js"),
  placement: () => import("./placement/main.js"),
  accuracy: () => import("./accuracy/main.js"),
  speculation: () => import("./speculation/main.js"),
  programs: () => import("./programs/main.js"),
  "kv-retention": () => import("./kv-retention/main.js"),
  autoscale: () => import("./autoscale/main.js"),
};

const [name, ...argv] = process.argv.slice(2);
const load = name === undefined ? undefined : suites[name];
if (load === undefined) {
  console.error(`usage: npm run bench -- <${Object.keys(suites).join("|")}> [--json FILE] [suite flags]`);
  process.exit(2);
}
await (await load()).run(argv);
