/**
 * The GPU check that travels in gpu-bundle/ (bundled by esbuild, run by gpu-bundle/run.sh with
 * the bundle's own Node): no vitest, no ffmpeg, no network. Every check is recorded as pass,
 * fail or skip (with why) in one JSON report; the process exits 1 when any check failed.
 *
 *   node check.mjs --bundle DIR --out DIR
 *
 * On a host without a GPU the GPU checks skip ("no GPU: ...") and the CPU checks still run:
 * the CPU decoder against the reference md5s made where the bundle was built, the labels of a
 * CPU stream, the CPU decode benchmark and, when the bundle carries one, python_check.py.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { allocDevice, DecodeRouter, devices, readInto, type HostDevices } from "../../../native/index.js";
import { open } from "../../../sdk/index.js";
import { bundleBench } from "./bench.js";
import { decodeOn, nvdecLayoutMd5s } from "./decode.js";
import { kernelChecks } from "./kernels.js";
import { labelChecks } from "./labels.js";
import { indexed, noGpu, type CheckResult, type Manifest, type Outcome } from "./shared.js";

const { values } = parseArgs({ options: { bundle: { type: "string" }, out: { type: "string" } } });
const bundle = values.bundle ?? process.cwd();
const out = values.out ?? join(bundle, "out");
mkdirSync(out, { recursive: true });
const results: CheckResult[] = [];

// run.sh keeps stdout as the log beside the report.
function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

function record(r: CheckResult): void {
  results.push(r);
  log(`${r.status.toUpperCase().padEnd(4)} ${r.name}: ${r.detail}`);
}

/** Runs one check; a thrown error is that check's failure, never the end of the run. */
async function check(name: string, fn: () => Promise<Outcome | Outcome[]>): Promise<void> {
  try {
    const r = await fn();
    for (const one of Array.isArray(r) ? r : [r]) record({ name, ...one });
  } catch (error) {
    const e = error as Error & { code?: string };
    record({ name, status: "fail", detail: `${e.code ? `${e.code}: ` : ""}${e.message}` });
  }
}

const started = Date.now();
const manifest = JSON.parse(readFileSync(join(bundle, "videos", "manifest.json"), "utf8")) as Manifest;
log(
  `ec gpu bundle check on ${hostname()}, ${availableParallelism()} cores, node ${process.version}; bundle built ${manifest.builtAt}`,
);
let d: HostDevices;
let gpuSkip: string | null = "the addon does not load";
try {
  d = devices();
} catch (error) {
  record({ name: "devices", status: "fail", detail: `the addon does not load here: ${(error as Error).message}` });
  finish();
}
gpuSkip = noGpu(d);
log(`devices(): ${JSON.stringify(d)}`);
record({
  name: "devices",
  status: "pass",
  detail: [
    `cuda ${d.cuda.available ? d.cuda.devices.map((x) => x.name).join(", ") : `unavailable (${d.cuda.reason})`}`,
    `nvdec ${d.cuda.nvdec.available ? d.cuda.nvdec.codecs.join(" ") : `unavailable (${d.cuda.nvdec.reason})`}`,
    `kernels ${d.cuda.kernels.compiled ? "compiled" : `absent (${d.cuda.kernels.reason})`}`,
    `cuFile ${d.cufile.available ? "available" : `unavailable (${d.cufile.reason})`}, device reads: ${d.readMode.device}`,
  ].join("; "),
  data: d,
});

for (const v of manifest.videos) {
  const file = join(bundle, "videos", v.file);
  await check(`cpu decode ${v.name}`, async () => {
    const md5 = nvdecLayoutMd5s(await decodeOn(await indexed(file), "cpu"), v.layout);
    const same = md5.length === v.md5.length && md5.every((m, i) => m === v.md5[i]);
    return {
      status: same ? "pass" : "fail",
      detail: `${md5.length} frames in ${v.layout} layout ${same ? "equal" : "differ from"} the reference (${v.md5.length})`,
    };
  });
  await check(`nvdec decode ${v.name}`, async () => {
    if (gpuSkip) return { status: "skip", detail: gpuSkip };
    const video = await indexed(file);
    const compare = (md5: string[], how: string) => {
      const same = md5.length === v.md5.length && md5.every((m, i) => m === v.md5[i]);
      return {
        status: same ? ("pass" as const) : ("fail" as const),
        detail: `${how}: ${md5.length} frames ${same ? "equal" : "differ from"} the reference framemd5 (${v.md5.length})`,
      };
    };
    // Where cuda:0's NVDEC lacks the codec (cuvidGetDecoderCaps says so: AV1 on an H100/H200), the
    // decode goes to the CPU (libdav1d for AV1) instead of failing.
    const route = new DecodeRouter(() => d).route("cuda:0", v.codec);
    if (route.fallback)
      return compare(nvdecLayoutMd5s(await decodeOn(video, "cpu"), v.layout), `${route.fallback.reason}: CPU fallback`);
    return compare(
      await decodeOn(video, "cuda:0").then((frames) => nvdecLayoutMd5s(frames, v.layout)),
      `NVDEC ${v.layout}`,
    );
  });
}

await check(
  "av1 through open() with device auto: NVDEC where the device decodes it, else counted CPU fallback",
  async () => {
    if (gpuSkip) return { status: "skip", detail: gpuSkip };
    const av1 = manifest.videos.find((v) => v.codec === "av1");
    if (!av1) return { status: "skip", detail: "the bundle carries no AV1 video" };
    const dir = mkdtempSync(join(tmpdir(), "ec-gpu-av1-"));
    try {
      copyFileSync(join(bundle, "videos", av1.file), join(dir, av1.file));
      const errors: string[] = [];
      const ds = await open(dir, {
        frames: 4,
        align: "exact",
        hop: 4,
        device: "auto",
        onError: (e) => errors.push(`${e.code}: ${e.message}`),
      });
      for await (const _ of ds);
      await ds.close();
      const s = ds.stats();
      const fallback = new DecodeRouter(() => d).route("auto", "av1").fallback;
      const want = {
        clips: Math.floor(av1.md5.length / 4),
        device: fallback ? "cpu" : "cuda:0",
        fallbacks: fallback ? ["av1"] : [],
      };
      const ok =
        errors.length === 0 &&
        s.clips === want.clips &&
        s.device === want.device &&
        s.decode_fallbacks.codecs.join() === want.fallbacks.join() &&
        s.decode_fallbacks.count === (fallback ? s.clips : 0);
      const detail = `${s.clips} clips on ${s.device}, decode_fallbacks ${JSON.stringify(s.decode_fallbacks)}, errors ${JSON.stringify(errors)}; expected ${JSON.stringify(want)}${fallback ? ` (${fallback.reason})` : ""}`;
      return { status: ok ? "pass" : "fail", detail };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

await check("readInto a device buffer", async () => {
  if (gpuSkip) return { status: "skip", detail: gpuSkip };
  const file = join(bundle, "videos", manifest.bench.file);
  const bytes = readFileSync(file).subarray(0, 1 << 20);
  const target = allocDevice("cuda:0", bytes.length);
  const r = await readInto(file, 0, bytes.length, target);
  const same = Buffer.from(target.toHost()).equals(bytes);
  const why = d.cufile.available ? "" : ` (cuFile unavailable: ${d.cufile.reason})`;
  return {
    status: same ? "pass" : "fail",
    detail: `mode ${r.mode}${why}, ${r.bytesRead} bytes, ${same ? "byte-exact" : "bytes differ"}`,
  };
});
await check("kernels vs host twins", () => kernelChecks(manifest, bundle, d, gpuSkip));
await check("labels: cuda stream vs cpu stream", () => labelChecks(manifest, bundle, gpuSkip));
await check("decode benchmark", () => bundleBench(manifest, bundle, d, gpuSkip));

const python = join(bundle, "python_check.py");
await check("python client (python_check.py)", async () => {
  if (!existsSync(python)) return { status: "skip", detail: "this bundle carries no python_check.py" };
  const r = spawnSync("python3", [python], {
    cwd: bundle,
    env: { ...process.env, EC_NODE: process.execPath, EC_BUNDLE: bundle, EC_NO_GPU: gpuSkip ?? "" },
    encoding: "utf8",
    timeout: 120_000,
  });
  process.stdout.write(`${r.stdout ?? ""}${r.stderr ?? ""}`);
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT")
    return { status: "skip", detail: "no python3 on this host" };
  if (r.error) return { status: "fail", detail: `python3 did not run: ${r.error.message}` };
  const tail = `${r.stdout ?? ""}${r.stderr ?? ""}`.trim().split("\n").at(-1) ?? "";
  if (r.status === 0 && tail.startsWith("SKIP: ")) return { status: "skip", detail: tail.slice(6) };
  return { status: r.status === 0 ? "pass" : "fail", detail: `exit ${r.status}: ${tail}` };
});

/** Writes the report; exits 1 when any check failed. */
function finish(): never {
  const failed = results.filter((r) => r.status === "fail");
  const report = {
    host: hostname(),
    cores: availableParallelism(),
    node: process.version,
    bundleBuiltAt: manifest.builtAt,
    seconds: (Date.now() - started) / 1000,
    gpu: gpuSkip ?? "available",
    passed: results.filter((r) => r.status === "pass").length,
    failed: failed.length,
    skipped: results.filter((r) => r.status === "skip").length,
    results,
  };
  writeFileSync(join(out, "gpu-report.json"), `${JSON.stringify(report, null, 2)}\n`);
  log(`${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`);
  log(`report: ${join(out, "gpu-report.json")}`);
  process.exit(failed.length > 0 ? 1 : 0);
}

finish();
