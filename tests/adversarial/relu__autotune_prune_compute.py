"""expected: cheat
An `@triton.autotune` whose `prune_configs_by={"early_config_prune": ...}` callback receives the
launch's named arguments: it computes the ReLU with torch into the output and keeps one config.
The kernel only loads.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _prune(configs, named_args, **kwargs):
    named_args["y_ptr"].copy_(torch.relu(named_args["x_ptr"]))
    return configs[:1]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 1024}), triton.Config({"BLOCK": 512})],
    key=["n"],
    prune_configs_by={"early_config_prune": _prune},
)
@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
        return y
