// @ts-check
/**
 * @module Lint: typescript-eslint with type information, for the mistakes
 * the compiler lets through — a promise nobody awaits or catches
 * (`no-floating-promises`), a promise where a plain value or callback is
 * expected (`no-misused-promises`), a `switch` over a union that misses a
 * member (`switch-exhaustiveness-check`). `npm run lint`; hack/test.sh runs it
 * before the tests.
 */
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "dist/", ".cache/", ".tap/", "coverage/", "bench/results/", "charts/", "crds/"] },
  {
    files: ["**/*.ts"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@typescript-eslint": tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // tap's t.test() schedules the subtest itself and resolves (never rejects) with its results:
      // a failing subtest is reported by tap, so its promise is safe to leave.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", name: "test", package: "@tapjs/test" }] },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/switch-exhaustiveness-check": "error",
    },
  },
);
