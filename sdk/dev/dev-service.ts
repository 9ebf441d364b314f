/** What one local service of `ec dev` is; the list of them is in services.ts. */

/** What `ec dev` was asked for. */
export interface DevRequest {
  readonly port: number;
  readonly persistDir?: string;
  readonly quiet: boolean;
}

/** A started local service: the fields it adds to `ec dev --json`, and how to stop it. */
export interface RunningService {
  readonly fields: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

/** One local service of `ec dev`; it may read the fields of the services started before it. */
export interface DevService {
  readonly name: string;
  start(req: DevRequest, before: Readonly<Record<string, string>>): Promise<RunningService>;
}
