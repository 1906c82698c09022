# Expected status: shape_mismatch. The loss value is right but it comes back as a 1-element
# tensor of shape (1,); torch.mean returns a 0-dim tensor of shape ().
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024


@triton.jit
def _mse_partial_kernel(a_ptr, b_ptr, partial_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(a_ptr + offsets, mask=mask, other=0.0)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0)
    d = a - b
    tl.store(partial_ptr + tl.program_id(0), tl.sum(d * d, axis=0))


@triton.jit
def _mse_final_kernel(partial_ptr, out_ptr, n_partials, n_elements, BLOCK_SIZE: tl.constexpr):
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_partials, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(partial_ptr + offsets, mask=offsets < n_partials, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_elements)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        a = predictions.contiguous()
        b = targets.contiguous()
        n = a.numel()
        n_partials = triton.cdiv(n, BLOCK_SIZE)
        partials = torch.empty(n_partials, dtype=torch.float32, device=a.device)
        out = torch.empty(1, dtype=a.dtype, device=a.device)  # BUG: should be torch.empty(())
        _mse_partial_kernel[(n_partials,)](a, b, partials, n, BLOCK_SIZE=BLOCK_SIZE)
        _mse_final_kernel[(1,)](partials, out, n_partials, n, BLOCK_SIZE=BLOCK_SIZE)
        return out
