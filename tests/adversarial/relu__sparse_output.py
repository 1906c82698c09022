"""expected: shape_mismatch
Computes ReLU with a Triton kernel into the values of a sparse COO tensor built outside the
forward (so no PyTorch compute runs in it), and returns that sparse tensor: right values, but not
a dense strided tensor. It has no single strided storage to export, so it must be judged a wrong
output, not crash the harness.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BATCH, DIM = 13, 1000  # examples/problems/relu.py


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


# Built at import: the constructor is audited like forward (stack/floor_divide are compute).
_FLAT = torch.arange(BATCH * DIM)
_INDICES = torch.stack([_FLAT // DIM, _FLAT % DIM])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        # The sparse tensor itself is built by model.to(device) (`_apply`), outside the audit.
        self.indices, self.values, self.sparse = _INDICES.clone(), torch.zeros(BATCH * DIM), None

    def _build(self, indices, values):
        # The sparse tensor's values are `values` itself (no copy): the kernel writes into them.
        self.values, self.indices = values, indices
        self.sparse = torch.sparse_coo_tensor(indices, values, (BATCH, DIM), is_coalesced=True)

    def _apply(self, fn, recurse=True):
        # model.to(device) moves the plain tensors and rebuilds the sparse one, outside forward.
        self._build(fn(self.indices), fn(self.values))
        return super()._apply(fn, recurse)

    def forward(self, x):
        n = x.numel()
        _relu_kernel[(triton.cdiv(n, 1024),)](x, self.values, n, BLOCK_SIZE=1024)
        return self.sparse
