# Expected status: mismatch. The variance divides by N - 1 (unbiased, as torch.var does by
# default) where nn.LayerNorm divides by N: every output is off by a factor of about
# sqrt(256 / 257), a relative error near 2e-3, far above the 1e-4 tolerance.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, row_stride, eps,
                      BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / (n_cols - 1)  # BUG: biased variance divides by n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * row_stride + cols, xc * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps, elementwise_affine=True)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n_cols = x.shape[-1]
        _layernorm_kernel[(x.shape[0],)](
            x, self.ln.weight, self.ln.bias, y, n_cols, x.stride(0), self.ln.eps,
            BLOCK_SIZE=triton.next_power_of_2(n_cols),
        )
        return y
