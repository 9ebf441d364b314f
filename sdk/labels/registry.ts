/**
 * Named labelers: a registry of factories (built-ins registered here, user ones via
 * `registerLabeler`) and the resolution of the `labels` spec into labeler instances.
 */
import { createHash } from "node:crypto";
import { describeReceived } from "../../common/errors.js";
import { blackLabeler } from "./builtins/black.js";
import { conformanceLabeler } from "./builtins/conformance.js";
import { frozenLabeler } from "./builtins/frozen.js";
import { integrityLabeler } from "./builtins/integrity.js";
import { letterboxLabeler } from "./builtins/letterbox.js";
import { motionLabeler } from "./builtins/motion.js";
import { sceneCutLabeler } from "./builtins/scene-cut.js";
import { LabelOptionError } from "./errors.js";
import type { Labeler, LabelerFactory, LabelFunction } from "./labeler.js";

/** Every labeler name `labels` can use; the built-ins are registered up front. */
export const labelerRegistry = new Map<string, LabelerFactory>([
  ["integrity", integrityLabeler],
  ["black", blackLabeler],
  ["frozen", frozenLabeler],
  ["scene-cut", sceneCutLabeler],
  ["motion", motionLabeler],
  ["letterbox", letterboxLabeler],
  ["conformance", conformanceLabeler],
]);

/** The built-ins, run when `labels` is `true`. */
export const DEFAULT_LABELERS: readonly string[] = [...labelerRegistry.keys()];

const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * Registers a named labeler factory so specs can refer to it by name.
 *
 * @example
 * registerLabeler("dark", (o) => labelerFromFunction("dark", (frames) => ({ flags: [] })));
 */
export function registerLabeler(name: string, factory: LabelerFactory, registry = labelerRegistry): void {
  if (!NAME.test(name))
    throw new LabelOptionError(`Expected a kebab-case labeler name but received ${describeReceived(name)}`);
  if (typeof factory !== "function")
    throw new LabelOptionError(
      `Expected a labeler factory function for ${name} but received ${describeReceived(factory)}`,
    );
  registry.set(name, factory);
}

/**
 * Wraps a plain function as a labeler. Its flags only tag the clip (severity "tag") unless
 * `severity: "fail"` is given or the function returns `valid: false`.
 *
 * @example
 * const bright = labelerFromFunction("bright", (frames, info, ctx) => ({ values: { luma: ctx.analysis().frames[0]?.mean ?? 0 } }));
 */
export function labelerFromFunction(name: string, fn: LabelFunction, severity: "fail" | "tag" = "tag"): Labeler {
  // The source text stands in for a version: an edited function does not reuse stale cached labels.
  const digest = createHash("sha256").update(fn.toString()).digest("hex").slice(0, 12);
  return { name, severity, fingerprint: `${name}@fn:${digest}`, label: fn };
}

/**
 * What `labels` accepts:
 * - `true`: every built-in with default thresholds;
 * - a list of registered names;
 * - an object of name → `true` (defaults) | options (thresholds) | `false` (off) | a function | a Labeler;
 *   it runs exactly the entries it names.
 */
export type LabelsSpec =
  | boolean
  | readonly string[]
  | Readonly<Record<string, boolean | Readonly<Record<string, unknown>> | LabelFunction | Labeler>>;

function isLabeler(v: unknown): v is Labeler {
  return (
    v !== null &&
    typeof v === "object" &&
    typeof (v as Labeler).label === "function" &&
    typeof (v as Labeler).name === "string"
  );
}

function fromRegistry(
  name: string,
  options: Readonly<Record<string, unknown>> | undefined,
  registry: ReadonlyMap<string, LabelerFactory>,
): Labeler {
  const factory = registry.get(name);
  if (!factory) {
    throw new LabelOptionError(
      `Expected a registered labeler (${[...registry.keys()].join(", ")}) but received ${JSON.stringify(name)}`,
    );
  }
  return factory(options);
}

/**
 * Turns a `labels` spec into labeler instances, validating every threshold before any frame is read.
 *
 * @example
 * const labelers = resolveLabelers({ black: { maxRatio: 0.2 }, frozen: true, mine: (frames) => ({ flags: [] }) });
 */
export function resolveLabelers(
  spec: LabelsSpec,
  registry: ReadonlyMap<string, LabelerFactory> = labelerRegistry,
): Labeler[] {
  if (spec === false) return [];
  if (spec === true)
    return DEFAULT_LABELERS.filter((n) => registry.has(n)).map((n) => fromRegistry(n, undefined, registry));
  if (Array.isArray(spec)) {
    return spec.map((name: unknown) => {
      if (typeof name !== "string")
        throw new LabelOptionError(`Expected labeler names in the labels list but received ${describeReceived(name)}`);
      return fromRegistry(name, undefined, registry);
    });
  }
  if (spec === null || typeof spec !== "object") {
    throw new LabelOptionError(
      `Expected true, a list of labeler names or an object of labeler settings for labels but received ${describeReceived(spec)}`,
    );
  }
  const out: Labeler[] = [];
  for (const [name, v] of Object.entries(spec as Record<string, unknown>)) {
    if (v === false || v === undefined) continue;
    if (v === true) out.push(fromRegistry(name, undefined, registry));
    else if (typeof v === "function") out.push(labelerFromFunction(name, v as LabelFunction));
    else if (isLabeler(v)) out.push(v.name === name ? v : { ...v, name, label: v.label.bind(v) });
    else if (v !== null && typeof v === "object" && !Array.isArray(v))
      out.push(fromRegistry(name, v as Record<string, unknown>, registry));
    else
      throw new LabelOptionError(
        `Expected true, false, an options object, a function or a labeler for labels.${name} but received ${describeReceived(v)}`,
      );
  }
  const seen = new Set<string>();
  for (const l of out) {
    if (seen.has(l.name))
      throw new LabelOptionError(`Expected unique labeler names but received ${JSON.stringify(l.name)} twice`);
    seen.add(l.name);
  }
  return out;
}
