// Prints what binding.gyp needs to link the addon against the minimal static FFmpeg of
// build.sh, building it first when this machine has none (once: it is cached):
//   --include  the include directory
//   --libs     the static archives (libavcodec, libswscale, libavutil, libdav1d, zlib) and the
//              system libraries they need; their symbols stay hidden inside the addon
//   --prefix   the prefix itself
//   --licenses the licence texts of what the addon links, and NOTICE.txt
// The addon then depends on libc, libm, libstdc++ and libgcc only.
const { execFileSync } = require("node:child_process");
const { join } = require("node:path");

const build = join(__dirname, "build.sh");
const prefix = execFileSync("bash", [build], { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" }).trim();
const lib = (name) => join(prefix, "lib", `lib${name}.a`);
// Debian's libz.a is position-independent; a full path keeps the linker from taking libz.so.
const zlib = execFileSync("gcc", ["-print-file-name=libz.a"], { encoding: "utf8" }).trim();

const flags = {
  "--prefix": [prefix],
  "--include": [join(prefix, "include")],
  "--libs": [
    ...["avcodec", "swscale", "avutil", "dav1d"].map(lib),
    zlib,
    "-lm",
    "-lpthread",
    "-ldl",
    // FFmpeg's x86 assembly refers to its own tables directly: bind them inside the addon.
    "-Wl,-Bsymbolic",
    "-Wl,--exclude-libs,ALL",
  ],
  "--licenses": [
    join(__dirname, "NOTICE.txt"),
    ...["FFmpeg-LGPL-2.1.txt", "dav1d-BSD-2-Clause.txt", "zlib.txt"].map((name) =>
      join(prefix, "share", "licenses", name),
    ),
  ],
};
const what = process.argv[2] ?? "--prefix";
if (!flags[what]) {
  process.stderr.write(`Expected --prefix, --include, --libs or --licenses but received ${what}\n`);
  process.exit(2);
}
process.stdout.write(flags[what].join(" "));
