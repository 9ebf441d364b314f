// Just enough of CUDA's execution model to run native/src/kernels/kernels.cu unchanged on the
// CPU: every block in turn, its threads as real threads meeting at a real barrier, __shared__
// variables shared by one block's threads, atomics as atomics. It checks the kernels' own code
// (indexing, bounds, shared-memory reductions, the previous-frame grid) on machines without a
// GPU; speed and the driver API are the GPU check's business (test/gpu/check.sh).
#pragma once

#include <atomic>
#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>

#define __CUDACC__ 1
#define __host__
#define __device__
#define __forceinline__ inline
#define __global__
#define __shared__ static  // blocks run one at a time, so a static is one block's shared memory

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

inline thread_local dim3 threadIdx;
inline thread_local dim3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
inline std::barrier<>* blockBarrier = nullptr;

inline void __syncthreads() { blockBarrier->arrive_and_wait(); }

inline unsigned atomicAdd(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}

/**
 * kernel<<<grid, block>>>(): `body` calls the kernel with its arguments. One thread per thread
 * of a block, created once per launch; they walk the blocks together, meeting at the barrier
 * between blocks so a block's shared memory is never touched by the next one too early.
 */
template <typename Body>
void launch(dim3 grid, dim3 block, Body body) {
  gridDim = grid;
  blockDim = block;
  std::barrier<> barrier(static_cast<std::ptrdiff_t>(block.x * block.y * block.z));
  blockBarrier = &barrier;
  std::vector<std::thread> threads;
  for (unsigned tz = 0; tz < block.z; ++tz) {
    for (unsigned ty = 0; ty < block.y; ++ty) {
      for (unsigned tx = 0; tx < block.x; ++tx) {
        threads.emplace_back([=, &barrier] {
          threadIdx = {tx, ty, tz};
          for (unsigned bz = 0; bz < grid.z; ++bz) {
            for (unsigned by = 0; by < grid.y; ++by) {
              for (unsigned bx = 0; bx < grid.x; ++bx) {
                blockIdx = {bx, by, bz};
                body();
                barrier.arrive_and_wait();
              }
            }
          }
        });
      }
    }
  }
  for (auto& t : threads) t.join();
}
