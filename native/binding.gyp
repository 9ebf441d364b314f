{
  "variables": {
    "cuda_include%": "<!(node find-cuda.cjs)",
    "nvcc%": "<!(node find-cuda.cjs --nvcc)"
  },
  "targets": [
    {
      "target_name": "ec_native",
      "sources": [
        "src/batch-memory.cc",
        "src/binding.cc",
        "src/binding/common.cc",
        "src/binding/decoder.cc",
        "src/binding/device-memory.cc",
        "src/binding/devices.cc",
        "src/binding/file-reads.cc",
        "src/binding/image.cc",
        "src/binding/kernels.cc",
        "src/binding/range-client.cc",
        "src/binding/shared-map.cc",
        "src/codec-config.cc",
        "src/cpu-backend.cc",
        "src/cuda-backend.cc",
        "src/cuda-driver.cc",
        "src/curl-api.cc",
        "src/decoder.cc",
        "src/device-backend.cc",
        "src/device-download.cc",
        "src/ffmpeg-handles.cc",
        "src/host-converter.cc",
        "src/host-report.cc",
        "src/image-decoder.cc",
        "src/kernels/kernel-calls.cc",
        "src/kernels/kernel-reference.cc",
        "src/kernels/kernels.cc",
        "src/nvdec-caps.cc",
        "src/packed-frames.cc",
        "src/range-client.cc",
        "src/read-into.cc",
        "src/shared-map.cc"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<!(node ffmpeg/flags.cjs --include)"
      ],
      "libraries": ["<!@(node ffmpeg/flags.cjs --libs)"],
      "copies": [{ "destination": "<(PRODUCT_DIR)/licenses", "files": ["<!@(node ffmpeg/flags.cjs --licenses)"] }],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter", "-O2"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++14", "-std=gnu++17"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "conditions": [
        ["cuda_include!=''", {
          "defines": ["EC_WITH_CUDA"],
          "include_dirs": ["<(cuda_include)"]
        }, {
          "sources": ["src/cuda-stubs.cc"]
        }],
        ["cuda_include!='' and nvcc!=''", {
          "defines": ["EC_WITH_KERNELS"],
          "include_dirs": ["<(INTERMEDIATE_DIR)"],
          "actions": [
            {
              "action_name": "embed_kernels",
              "inputs": ["embed-kernels.cjs", "src/kernels/kernels.cu", "src/kernels/pixel-math.h"],
              "outputs": ["<(INTERMEDIATE_DIR)/ec-kernels-fatbin.h"],
              "action": ["node", "embed-kernels.cjs", "<(nvcc)", "src/kernels/kernels.cu", "<(INTERMEDIATE_DIR)/ec-kernels-fatbin.h"],
              "message": "nvcc: src/kernels/kernels.cu"
            }
          ]
        }]
      ]
    }
  ]
}
