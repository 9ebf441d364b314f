import type { S3Env, S3EnvName } from "./s3-env.js";
import { S3ErrorCode, S3SourceError } from "./s3-errors.js";
import type { BucketLocation, S3Credentials } from "./s3-url.js";

/** Environment variable names of one key pair. */
interface EnvKeyNames {
  readonly id: S3EnvName;
  readonly secret: S3EnvName;
  readonly token?: S3EnvName;
}

const AWS_ENV: EnvKeyNames = { id: "AWS_ACCESS_KEY_ID", secret: "AWS_SECRET_ACCESS_KEY", token: "AWS_SESSION_TOKEN" };
const R2_ENV: EnvKeyNames = { id: "R2_ACCESS_KEY_ID", secret: "R2_SECRET_ACCESS_KEY" };

function fromEnv(env: S3Env, names: EnvKeyNames): S3Credentials | "partial" | undefined {
  const id = env[names.id] || undefined;
  const secret = env[names.secret] || undefined;
  if (id === undefined && secret === undefined) return undefined;
  if (id === undefined || secret === undefined) return "partial";
  const token = names.token === undefined ? undefined : env[names.token] || undefined;
  return token === undefined
    ? { accessKeyId: id, secretAccessKey: secret }
    : { accessKeyId: id, secretAccessKey: secret, sessionToken: token };
}

/**
 * The access key for a bucket: the `credentials` option, else the environment `env` that
 * resolveOptions picked (R2_* first for r2:// URLs, AWS_* first for s3://). Only these places are read, on purpose: the AWS
 * default chain would also probe the instance-metadata address, which stalls off-cloud.
 *
 * @example
 * const creds = resolveCredentials(location, options.credentials, pickS3Env(process.env)); // throws ERR_S3_CREDENTIALS_MISSING when none
 */
export function resolveCredentials(
  location: Pick<BucketLocation, "scheme" | "bucket">,
  given: S3Credentials | undefined,
  env: S3Env = {},
): S3Credentials {
  if (given !== undefined) return given;
  const order = location.scheme === "r2" ? [R2_ENV, AWS_ENV] : [AWS_ENV, R2_ENV];
  const partial: EnvKeyNames[] = [];
  for (const names of order) {
    const found = fromEnv(env, names);
    if (found === "partial") partial.push(names);
    else if (found !== undefined) return found;
  }
  const [first, second] = order as [EnvKeyNames, EnvKeyNames];
  const hint = partial.length > 0 ? `only one of ${partial[0]!.id} and ${partial[0]!.secret} is set` : "none was found";
  throw new S3SourceError(
    S3ErrorCode.CREDENTIALS_MISSING,
    `${location.scheme}://${location.bucket} needs an access key but ${hint}: pass credentials: { accessKeyId, secretAccessKey } ` +
      `or set ${first.id} and ${first.secret} (or ${second.id} and ${second.secret})` +
      (location.scheme === "r2"
        ? "; create one under R2 › Manage API tokens (Object Read; Object Read & Write to push)"
        : ""),
  );
}
