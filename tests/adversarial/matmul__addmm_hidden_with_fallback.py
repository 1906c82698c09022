"""expected: policy
The GEMM in the library, reached below both observers another way than a redispatch: the
Python dispatch key excluded on this thread and RecordFunction off around `torch.addmm` (no
dispatch mode and no profiler sees it). Where that raises (the library's kernel refused), it
catches the error and computes the product with a Triton GEMM instead, so forward never fails:
the library call was still made, and under the strict policy that is the verdict whatever the
candidate did after it. The result is copied out by a Triton kernel, so a launch is seen.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_exclude = getattr(torch._C, "_dispatch_tls_set_dispatch_key_" + "excluded")
_rf = getattr(torch._C._autograd, "_enable_record_" + "function")
_PY = getattr(torch._C.DispatchKey, "Py" + "thon")


@triton.jit
def _matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            a_ptr + rm[:, None] * K + rk[None, :],
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + rk[:, None] * N + rn[None, :],
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        m, k = a.shape
        n = b.shape[1]
        zero = torch.zeros((m, n), dtype=a.dtype, device=a.device)
        _exclude(_PY, True)
        _rf(False)
        try:
            prod = torch.addmm(zero, a, b)
        except RuntimeError:
            prod = torch.empty((m, n), dtype=a.dtype, device=a.device)
            grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
            _matmul_kernel[grid](a, b, prod, m, n, k, BM=32, BN=32, BK=32)
        finally:
            _rf(True)
            _exclude(_PY, False)
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
        _copy_kernel[(triton.cdiv(m * n, 1024),)](prod, c, m * n, BLOCK=1024)
        return c
