/* The GPUs the parallel-plan search knows (mtk_gpu_spec): peak dense
 * bf16 tensor throughput, memory, and the per-GPU one-way bandwidth of the
 * links of the machines they come in.  NVLink's datasheet figure is both
 * directions together (900 GB/s on Hopper), so one way is half; the
 * network is one NIC per GPU as in NVIDIA's DGX/HGX systems (400 Gb/s
 * ConnectX-7 = 50 GB/s).  Cards without NVLink talk over PCIe. */
#include "mtk/plan.h"

#include <string.h>

static const mtk_gpu_spec specs[] = {
    { "h100-80gb", 989.0, 80.0, 450.0, 50.0, 8,
      "NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 1,979 TFLOPS with sparsity (989 dense), 80 GB HBM3, "
      "NVLink 900 GB/s; DGX H100: 8x ConnectX-7 400 Gb/s" },
    { "h100-sxm", 989.0, 80.0, 450.0, 50.0, 8, "as h100-80gb" },
    { "h100-pcie", 756.0, 80.0, 300.0, 50.0, 8,
      "NVIDIA H100 datasheet (PCIe): BF16 1,513 TFLOPS with sparsity (756 dense), 80 GB HBM2e, NVLink bridge "
      "600 GB/s (pairs only: an estimate for the node)" },
    { "h200", 989.0, 141.0, 450.0, 50.0, 8,
      "NVIDIA H200 datasheet (SXM): BF16 1,979 TFLOPS with sparsity, 141 GB HBM3e, NVLink 900 GB/s; DGX H200: "
      "8x ConnectX-7 400 Gb/s" },
    { "a100-80gb", 312.0, 80.0, 300.0, 25.0, 8,
      "NVIDIA A100 datasheet (SXM): BF16 312 TFLOPS dense, 80 GB HBM2e, NVLink 600 GB/s; DGX A100: "
      "8x ConnectX-6 200 Gb/s" },
    { "a100-40gb", 312.0, 40.0, 300.0, 25.0, 8,
      "NVIDIA A100 datasheet (SXM): BF16 312 TFLOPS dense, 40 GB HBM2, NVLink 600 GB/s; DGX A100: "
      "8x ConnectX-6 200 Gb/s" },
    { "b200", 2250.0, 180.0, 900.0, 50.0, 8,
      "NVIDIA DGX B200 datasheet: 72 PFLOPS FP8 training for 8 GPUs (BF16 dense: 2.25 PFLOPS a GPU), "
      "1,440 GB for 8 GPUs, NVLink 5 1.8 TB/s, 8x ConnectX-7 400 Gb/s" },
    { "l40s", 362.0, 48.0, 32.0, 25.0, 8,
      "NVIDIA L40S datasheet: BF16 362 TFLOPS dense (733 with sparsity), 48 GB GDDR6, no NVLink: PCIe Gen4 "
      "x16 64 GB/s both ways; a 200 Gb/s NIC a GPU assumed" },
    { "rtx-4090", 165.2, 24.0, 32.0, 12.5, 8,
      "NVIDIA Ada Lovelace architecture whitepaper: RTX 4090 BF16 165.2 TFLOPS dense (FP32 accumulate), "
      "24 GB GDDR6X, no NVLink: PCIe Gen4 x16; a 100 Gb/s NIC a GPU assumed" },
};

const mtk_gpu_spec *mtk_gpu_specs(int32_t *count)
{
    if (count) *count = (int32_t)(sizeof specs / sizeof specs[0]);
    return specs;
}

const mtk_gpu_spec *mtk_gpu_spec_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof specs / sizeof specs[0]; i++)
        if (strcmp(specs[i].name, name) == 0) return &specs[i];
    return NULL;
}
