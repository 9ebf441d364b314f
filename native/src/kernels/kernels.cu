// CUDA kernels for frames that live on the GPU: colour conversion with resize (NVDEC output →
// rgb24 / planar float RGB) and the labelers' luma statistics. Compiled by nvcc into a fatbin
// that the addon embeds and loads with the driver API (kernels.cc), so no CUDA runtime is
// linked and one build runs with or without a GPU. The arithmetic lives in pixel-math.h,
// shared with the host twins the test suite runs on machines without a GPU.
#include "pixel-math.h"

using namespace ec::kernels;

extern "C" __global__ void ec_convert(ConvertParams p) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= p.dstWidth || y >= p.dstHeight) return;
  convertAt(p, x, y);
}

/**
 * One thread per grid sample of one frame: writes the frame's grid and adds into its record
 * (zeroed by the caller). `prev` is the previous frame's grid of the same size, or null.
 */
extern "C" __global__ void ec_luma_stats(LumaSource src, LumaStatsLayout layout, uint8_t* grid, const uint8_t* prev,
                                         uint32_t* record) {
  __shared__ uint32_t histogram[256];
  __shared__ unsigned long long diff;
  int t = threadIdx.y * blockDim.x + threadIdx.x;
  for (int i = t; i < 256; i += blockDim.x * blockDim.y) histogram[i] = 0;
  if (t == 0) diff = 0;
  __syncthreads();
  int gx = blockIdx.x * blockDim.x + threadIdx.x;
  int gy = blockIdx.y * blockDim.y + threadIdx.y;
  if (gx < layout.gridWidth && gy < layout.gridHeight) {
    int i = gy * layout.gridWidth + gx;
    uint8_t v = lumaAt(src, gx * layout.step, gy * layout.step);
    grid[i] = v;
    atomicAdd(&histogram[v], 1u);
    atomicAdd(&record[layout.rowSums() + gy], static_cast<uint32_t>(v));
    atomicAdd(&record[layout.colSums() + gx], static_cast<uint32_t>(v));
    if (prev) {
      int d = static_cast<int>(v) - static_cast<int>(prev[i]);
      atomicAdd(&diff, static_cast<unsigned long long>(d < 0 ? -d : d));
    }
  }
  __syncthreads();
  for (int i = t; i < 256; i += blockDim.x * blockDim.y) {
    if (histogram[i]) atomicAdd(&record[layout.histogram() + i], histogram[i]);
  }
  if (t == 0 && prev && diff) {
    atomicAdd(reinterpret_cast<unsigned long long*>(record + layout.diff()), diff);
  }
}
