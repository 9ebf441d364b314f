// Secrets live outside wrangler.toml, so `wrangler types` sees them only where a .dev.vars
// exists; declaring them here keeps Env complete wherever the types are regenerated.
declare namespace Cloudflare {
  interface Env {
    /** Comma-separated bearer tokens for PUT and the manifest. */
    EC_API_TOKENS: string;
    /** HMAC-SHA256 secret of signed URLs. */
    EC_SIGNING_KEY: string;
    /** base64 PKCS#8 DER Ed25519 private key that signs manifests. */
    EC_MANIFEST_KEY: string;
  }
}
