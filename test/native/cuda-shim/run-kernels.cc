// Runs the CUDA kernels through cuda-shim.h, launched as kernels.cc launches them on a GPU.
//   run-kernels convert IN OUT W H DST_W DST_H OUTPUT(0 rgb24 | 1 rgbf32-planar)   IN: packed yuv420p
//   run-kernels stats IN OUT W H STEP FRAMES                                        IN: FRAMES packed gray frames
// OUT receives the kernel's output bytes (the frame, or the uint32 records).
#include "cuda-shim.h"
// The kernels, unchanged:
#include "../../../native/src/kernels/kernels.cu"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

static std::vector<uint8_t> readAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

static void writeAll(const char* path, const void* data, size_t bytes) {
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

static unsigned blocks(int n, int per) { return static_cast<unsigned>((n + per - 1) / per); }

int main(int argc, char** argv) {
  if (argc < 8) return 2;
  std::string mode = argv[1];
  std::vector<uint8_t> in = readAll(argv[2]);
  int w = std::atoi(argv[4]);
  int h = std::atoi(argv[5]);
  if (mode == "convert" && argc == 9) {
    ConvertParams p{};
    YuvImage& s = p.src;
    s.y = in.data();
    s.u = in.data() + w * h;
    s.v = s.u + (w / 2) * (h / 2);
    s.yPitch = w;
    s.uvPitch = w / 2;
    s.uvStep = 1;
    s.bytesPerSample = 1;
    s.scale = 1.0f;
    s.width = w;
    s.height = h;
    s.chromaShiftX = 1;
    s.chromaShiftY = 1;
    p.matrix = colorMatrix(0.299f, 0.114f, false);
    p.dstWidth = std::atoi(argv[6]);
    p.dstHeight = std::atoi(argv[7]);
    p.output = std::atoi(argv[8]);
    p.dstPitch = p.output == kRgb24 ? p.dstWidth * 3 : p.dstWidth;
    size_t bytes = static_cast<size_t>(p.dstWidth) * p.dstHeight * 3 * (p.output == kRgb24 ? 1 : 4);
    std::vector<uint8_t> out(bytes, 0xAB);  // poison: every byte must be written
    p.dst = out.data();
    launch({blocks(p.dstWidth, 32), blocks(p.dstHeight, 8), 1}, {32, 8, 1}, [&] { ec_convert(p); });
    writeAll(argv[3], out.data(), out.size());
    return 0;
  }
  if (mode == "stats" && argc == 8) {
    int step = std::atoi(argv[6]);
    int frames = std::atoi(argv[7]);
    LumaStatsLayout layout = lumaStatsLayout(w, h, step);
    std::vector<uint32_t> records(static_cast<size_t>(layout.words()) * frames, 0);
    std::vector<uint8_t> grids[2];
    for (auto& g : grids) g.assign(static_cast<size_t>(layout.gridWidth) * layout.gridHeight, 0);
    for (int f = 0; f < frames; ++f) {
      LumaSource src{in.data() + static_cast<size_t>(f) * w * h, w, w, h, kLuma8, 0};
      uint8_t* grid = grids[f % 2].data();
      const uint8_t* prev = f > 0 ? grids[(f + 1) % 2].data() : nullptr;
      uint32_t* record = records.data() + static_cast<size_t>(f) * layout.words();
      launch({blocks(layout.gridWidth, 32), blocks(layout.gridHeight, 8), 1}, {32, 8, 1},
             [&] { ec_luma_stats(src, layout, grid, prev, record); });
    }
    writeAll(argv[3], records.data(), records.size() * sizeof(uint32_t));
    return 0;
  }
  return 2;
}
