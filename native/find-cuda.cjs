// Prints the CUDA include directory when cuda.h is there (binding.gyp compiles the
// CUDA backend only then), else nothing. CUDA_HOME / CUDA_PATH override the default.
const { existsSync } = require("node:fs");
const { join } = require("node:path");

const roots = [process.env.CUDA_HOME, process.env.CUDA_PATH, "/usr/local/cuda"].filter(Boolean);
const found = roots.map((r) => join(r, "include")).find((dir) => existsSync(join(dir, "cuda.h")));
process.stdout.write(process.env.EC_NO_CUDA ? "" : (found ?? ""));
