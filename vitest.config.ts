import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        // Edge tests run inside workerd with a local R2 (Miniflare), never a hand-made fake.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                EC_API_TOKENS: "test-token-a,test-token-b",
                EC_SIGNING_KEY: "test-signing-key-0123456789abcdef",
                // A fixed Ed25519 test key (base64 PKCS#8 DER), never used outside tests.
                EC_MANIFEST_KEY: "MC4CAQAwBQYDK2VwBCIEICTf+OWJx/JiTtvfnez/ekl8dq7phF7aPkQXvP+UDO7Y",
                // Generations follow uploads at once instead of after the deployed debounce.
                EC_PUBLISH_DELAY_SECONDS: "0",
              },
            },
          }),
        ],
        test: {
          name: "edge",
          include: ["test/edge/**/*.test.ts"],
          // Media fixtures are made by ffmpeg in Node and handed to workerd via provide/inject.
          globalSetup: ["test/edge/index-fixtures.ts"],
        },
      },
      {
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: ["test/edge/**", "node_modules/**"],
          environment: "node",
          setupFiles: ["test/setup/fast-check.ts", "test/setup/known-edges.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
