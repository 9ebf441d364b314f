// Which shared libraries an ELF file needs beyond libc, libm, libstdc++ and libgcc (and the
// loader): none for a self-contained ec_native.node. CUDA, NVDEC and cuFile are dlopen'ed,
// so they never appear here. Usage: node check-linked.cjs FILE  (exit 1 when any)
const { execFileSync } = require("node:child_process");

const SYSTEM =
  /^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|(\/lib64\/)?ld-linux-x86-64\.so\.2)$/;

/** The libraries `ldd file` lists, by name. */
function linkedLibraries(file) {
  return execFileSync("ldd", [file], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.trim().split(/\s+/)[0])
    .filter(Boolean);
}

/** Those of them that are not part of every glibc system with a C++ runtime. */
function unexpectedLibraries(file) {
  return linkedLibraries(file).filter((lib) => !SYSTEM.test(lib));
}

module.exports = { linkedLibraries, unexpectedLibraries };

if (require.main === module) {
  const extra = unexpectedLibraries(process.argv[2]);
  if (extra.length > 0) {
    process.stderr.write(
      `Expected ${process.argv[2]} to need only libc, libm, libstdc++ and libgcc but it needs ${extra.join(", ")}\n`,
    );
    process.exit(1);
  }
}
