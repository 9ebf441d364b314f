/**
 * What the bench's peers environment says when torchcodec or spdl cannot load FFmpeg: the
 * failure's last line and the packages to install, and nothing more for other failures.
 * The environment itself (5.4 GB from PyPI) is never made here.
 */
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types
import { explain, FFMPEG_APT_PACKAGES, PEERS_LOCK } from "../../scripts/bench-peers-env.mjs";

describe("bench peers environment", () => {
  it("names the Debian packages when the loader's output says a libav library is missing", () => {
    const output =
      '"spdl.io.lib._spdl_ffmpeg5: libavutil.so.57: cannot open shared object file"\nRuntimeError: Failed to import libspdl.';
    const said: string = explain("RuntimeError: Failed to import libspdl.", output);
    expect(said.startsWith("RuntimeError: Failed to import libspdl.")).toBe(true);
    expect(said).toContain(`apt-get install -y ${FFMPEG_APT_PACKAGES.join(" ")}`);
    expect(FFMPEG_APT_PACKAGES).toEqual(expect.arrayContaining(["libavcodec59", "libavformat59", "libswscale6"]));
  });

  it("passes other failures through unchanged", () => {
    expect(explain("ModuleNotFoundError: No module named 'torchcodec'")).toBe(
      "ModuleNotFoundError: No module named 'torchcodec'",
    );
  });

  it("keeps its lock under bench/", () => {
    expect(PEERS_LOCK).toMatch(/bench\/requirements-peers\.lock$/);
  });
});
