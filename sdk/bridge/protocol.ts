/**
 * The engine's wire: JSON lines between a client process (the Python package) and `ec engine`.
 * Requests go to the engine's stdin, events come back on its stdout, those about a dataset with
 * its `ds` number; a batch's bytes never cross the pipe, they are written into a shared-memory
 * slot the client has mapped.
 */
import { z } from "zod";
import { ClipInfoSchema } from "../clip-info.js";

/** Bump when a message changes shape; the client checks it in `opened`. */
export const PROTOCOL_VERSION = 2;

/** The client's number for a dataset of the session; the engine tags that dataset's events with it (`ds`). */
const DatasetId = z.number().int().nonnegative();

export const OpenRequest = z.object({
  op: z.literal("open"),
  ds: DatasetId,
  url: z.string(),
  /** `open()` options as JSON (camelCase names); the engine validates them like any caller's. */
  options: z.record(z.string(), z.unknown()),
  /** A tmpfs folder for the slot files (e.g. /dev/shm); they are unlinked once mapped. */
  dir: z.string(),
  /** The client maps CUDA IPC handles: batches decoded on a GPU stay there. */
  ipc: z.boolean().default(false),
  /** The client still maps the previous dataset's ring: the engine may hand it over again (`kept` in `opened`). */
  keep: z.boolean().default(false),
});

export const Request = z.discriminatedUnion("op", [
  OpenRequest,
  /** The client has opened every slot file: the engine unlinks them, so a crash leaves none behind. */
  z.object({ op: z.literal("mapped"), ds: DatasetId }),
  /** Closes the current dataset; the engine waits for the next open (a client reuses it from epoch to epoch). */
  z.object({ op: z.literal("reset") }),
  /** `seq`: the last batch (or end) handed to the user; `release`: slots whose tensors are gone. */
  z.object({
    op: z.literal("ack"),
    ds: DatasetId,
    seq: z.number().int().nonnegative(),
    release: z.array(z.number().int().nonnegative()),
  }),
  /** The checkpoint as of batch `seq` (0: before the first). */
  z.object({ op: z.literal("state"), ds: DatasetId, id: z.number().int(), seq: z.number().int().nonnegative() }),
  z.object({ op: z.literal("stats"), ds: DatasetId, id: z.number().int(), seq: z.number().int().nonnegative() }),
  z.object({ op: z.literal("merge"), id: z.number().int(), checkpoints: z.array(z.unknown()) }),
  z.object({ op: z.literal("close") }),
]);
export type Request = z.infer<typeof Request>;

export const SlotFile = z.object({ path: z.string(), capacity: z.number().int().nonnegative() });

export const Event = z.discriminatedUnion("event", [
  z.object({
    event: z.literal("opened"),
    protocol: z.literal(PROTOCOL_VERSION),
    /** Clips this rank delivers in this run, and in the whole epoch; null: known only at the epoch's end (table pages read lazily). */
    clips: z.number().int().nullable(),
    total: z.number().int().nullable(),
    /** The ring the engine sized for these options (`ringSlots`): the client maps every file. */
    slots: z.array(SlotFile),
    /** The previous dataset's ring, handed over again: the client uses its mappings of it (the files are unlinked). */
    kept: z.boolean().optional(),
  }),
  z.object({
    event: z.literal("batch"),
    seq: z.number().int().positive(),
    slot: z.number().int().nonnegative(),
    /** The slot file's size now (it grows when a batch needs more): the client remaps past its mapping. */
    capacity: z.number().int().positive(),
    bytes: z.number().int().positive(),
    shape: z.array(z.number().int()),
    dtype: z.string(),
    pixel_format: z.string(),
    device: z.string(),
    /** Set when the batch is in device memory: its CUDA IPC handle (base64); `capacity` is that memory's size. */
    ipc: z.string().optional(),
    /** One per batch row: `shape[0]` is their count. */
    clips: z.array(ClipInfoSchema),
  }),
  /** A skipped object or clip (the stream goes on). */
  z.object({
    event: z.literal("error"),
    code: z.string(),
    message: z.string(),
    clip: z.object({ key: z.string(), start: z.number() }).nullable(),
  }),
  /** A batch is ready but every slot is held: the client frees one or says so to the user. */
  z.object({
    event: z.literal("full"),
    /** Slots the engine has lent to batches being decoded into them: not the client's to free. */
    lent: z.number().int().nonnegative().optional(),
  }),
  z.object({ event: z.literal("end"), seq: z.number().int().positive() }),
  /** The answer to a request with an `id`: its `value`, or the `error` it failed with. */
  z.object({
    event: z.literal("reply"),
    id: z.number().int(),
    value: z.unknown().optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  }),
  /** The dataset cannot go on (open failed, the stream failed); without `ds`, the engine itself, which then exits. */
  z.object({ event: z.literal("failed"), code: z.string(), message: z.string() }),
]);
export type Event = z.infer<typeof Event>;
