// The environment probe's text parsers on what real installs write, and on
// damaged text: a version or nothing, never a throw (the fuzz targets in
// fuzz/ drive the same functions with any bytes).
#include <gtest/gtest.h>

#include <string>

#include "env/parsers.h"

using namespace cudabench::env;

TEST(EnvParsers, VersionJson) {
  EXPECT_EQ(parse_version_json(R"({"cuda": {"name": "CUDA SDK", "version": "13.0.88"}})").str(), "13.0.88");
  EXPECT_FALSE(parse_version_json(R"({"cuda": {"version": 13}})").known());
  EXPECT_FALSE(parse_version_json(R"({"cuda": ["version"]})").known());
  EXPECT_FALSE(parse_version_json(R"([1, 2])").known());
  EXPECT_FALSE(parse_version_json("{\"cuda\": {\"version\": \"13.0").known());
  EXPECT_FALSE(parse_version_json(std::string("\xff\xfe{}", 4)).known());
}

TEST(EnvParsers, VersionTxt) {
  EXPECT_EQ(parse_version_txt("CUDA Version 10.2.89\n").str(), "10.2.89");
  EXPECT_EQ(parse_version_txt("junk\nCUDA Version\t9.0.176").str(), "9.0.176");
  EXPECT_FALSE(parse_version_txt("CUDA Version").known());
  EXPECT_FALSE(parse_version_txt("CUDA Versionx 10.2").known());
  EXPECT_FALSE(parse_version_txt(std::string(1 << 20, ' ')).known());  // long: no deep recursion
}

TEST(EnvParsers, WheelDistInfo) {
  EXPECT_EQ(parse_wheel_dist_info("nvidia_cuda_nvcc-13.0.88.dist-info").str(), "13.0.88");
  EXPECT_EQ(parse_wheel_dist_info("nvidia_cuda_runtime_cu12-12.4.127.dist-info").str(), "12.4.127");
  EXPECT_EQ(parse_wheel_dist_info("nvidia_cuda_runtime_cu12-12.4.127.dist-info", "runtime").str(), "12.4.127");
  EXPECT_FALSE(parse_wheel_dist_info("nvidia_cuda_runtime_cu12-12.4.127.dist-info", "nvcc").known());
  EXPECT_FALSE(parse_wheel_dist_info("nvidia_cublas-13.0.0.dist-info").known());
  EXPECT_FALSE(parse_wheel_dist_info("nvidia_cuda_nvcc-13.0.88rc1.dist-info").known());
  EXPECT_FALSE(parse_wheel_dist_info("nvidia_cuda_nvcc_cu-13.0.dist-info").known());
  EXPECT_FALSE(parse_wheel_dist_info(".dist-info").known());
}

TEST(EnvParsers, CondaMetaName) {
  EXPECT_EQ(parse_conda_meta_name("cuda-nvcc-12.4.131-0.json").str(), "12.4.131");
  EXPECT_EQ(parse_conda_meta_name("cudatoolkit-11.8.0-h6a678d5_0.json").str(), "11.8.0");
  EXPECT_EQ(parse_conda_meta_name("cuda-cudart-12.4.127-h99ab3db_0.json").str(), "12.4.127");
  EXPECT_FALSE(parse_conda_meta_name("cuda-nvcc-12.4.131.json").known());
  EXPECT_FALSE(parse_conda_meta_name("cuda-nvrtc-12.4.127-0.json").known());
  EXPECT_FALSE(parse_conda_meta_name("cuda-nvcc--0.json").known());
}

TEST(EnvParsers, CudartHeader) {
  EXPECT_EQ(parse_cudart_header("/* x */\n#define CUDART_VERSION 13000\n").major_minor(), "13.0");
  EXPECT_EQ(parse_cudart_header("#define  CUDART_VERSION\t12090").major_minor(), "12.9");
  EXPECT_FALSE(parse_cudart_header("#define CUDART_VERSION_X 13000").known());
  // Beyond an int: no version (std::stoi threw out_of_range here and ended bench --env).
  EXPECT_FALSE(parse_cudart_header("#define CUDART_VERSION 99999999999999999999").known());
  EXPECT_FALSE(parse_cudart_header("#define CUDART_VERSION").known());
}

TEST(EnvParsers, ProcDriverVersion) {
  EXPECT_EQ(parse_proc_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 "
                                      "09:55:41 UTC 2025\nGCC version: gcc 12"),
            "580.95.05");
  EXPECT_EQ(parse_proc_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  575.51.03  Release"),
            "575.51.03");
  EXPECT_EQ(parse_proc_driver_version("something else"), "something else");
  EXPECT_EQ(parse_proc_driver_version(""), "");
}

TEST(EnvParsers, NvccVersion) {
  EXPECT_EQ(parse_nvcc_version("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
                               "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n"
                               "Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n")
                .str(),
            "13.0.88");
  EXPECT_EQ(parse_nvcc_version("Cuda compilation tools, release 11.8").str(), "11.8");
  EXPECT_FALSE(parse_nvcc_version("bash: nvcc: command not found").known());
}

TEST(EnvParsers, Soname) {
  EXPECT_EQ(version_from_soname("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05"), "580.95.05");
  EXPECT_EQ(version_from_soname("libcudart.so.13.0.96"), "13.0.96");
  EXPECT_EQ(version_from_soname("libcuda.so.1"), "");
  EXPECT_EQ(version_from_soname("libcuda.so"), "");
  EXPECT_EQ(version_from_soname("libcuda.so.580.95.05.bak"), "");
}

TEST(Parsers, NcclVersionCodes) {
  EXPECT_EQ(nccl_version_string(22703), "2.27.3");
  EXPECT_EQ(nccl_version_string(21805), "2.18.5");
  EXPECT_EQ(nccl_version_string(2708), "2.7.8");  // before 2.9: major*1000 + minor*100 + patch
  EXPECT_EQ(nccl_version_string(0), "");
  EXPECT_EQ(nccl_version_string(-1), "");
}
