// Prints the CUDA include directory when cuda.h is there (binding.gyp compiles the
// CUDA backend only then), else nothing; with --nvcc, the nvcc that compiles the kernels
// (src/kernels/), else nothing. CUDA_HOME / CUDA_PATH override the default; EC_NO_CUDA=1
// builds without any CUDA part, EC_NO_KERNELS=1 without the kernels only.
const { existsSync } = require("node:fs");
const { join } = require("node:path");

const roots = [process.env.CUDA_HOME, process.env.CUDA_PATH, "/usr/local/cuda"].filter(Boolean);
const pick = (rel) => roots.map((r) => join(r, rel)).find((p) => existsSync(p));
const found = process.argv.includes("--nvcc") ? pick("bin/nvcc") : pick("include/cuda.h")?.replace(/\/cuda\.h$/, "");
const skip = process.env.EC_NO_CUDA || (process.argv.includes("--nvcc") && process.env.EC_NO_KERNELS);
process.stdout.write(skip ? "" : (found ?? ""));
