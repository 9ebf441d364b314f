// Secrets live outside wrangler.toml, so `wrangler types` sees them only where a .dev.vars
// exists; declaring them here keeps Env complete wherever the types are regenerated.
declare namespace Cloudflare {
  interface Env {
    /** Comma-separated bearer tokens for PUT and the manifest. */
    EC_API_TOKENS: string;
    /** HMAC-SHA256 secret that signs URLs (and verifies those naming its `kid`). */
    EC_SIGNING_KEY: string;
    /** During a rotation: the previous signing secret(s), comma-separated, still verifying their URLs. */
    EC_SIGNING_KEY_PREVIOUS?: string;
    /** base64 PKCS#8 DER Ed25519 private key that signs manifests. */
    EC_MANIFEST_KEY: string;
  }
}
