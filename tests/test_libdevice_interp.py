"""libdevice functions with no `tl` spelling (atan, atan2, log10, cbrt, isnan, ...) verify on the
CPU: under the interpreter they are computed by numpy's function of the same meaning
(tools/job/interp_libdevice.py `_NUMPY_ELEMENTWISE`). Before, these honest kernels were a
`compile_error` ("libdevice.atan has no tl equivalent the Triton interpreter can run")."""

from __future__ import annotations

from tools.core.problem import read_problem

PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, y):
        return torch.atan2(x, y) + torch.log10(x.abs() + 1) + torch.atan(y) + torch.isnan(x).float()

def get_inputs():
    return [torch.randn(37, 29), torch.randn(37, 29)]

def get_init_inputs():
    return []
"""

KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    r = libdevice.atan2(x, y) + libdevice.log10(tl.abs(x) + 1) + libdevice.atan(y)
    r = r + libdevice.isnan(x).to(tl.float32)
    tl.store(o_ptr + offs, r, mask=m)


class ModelNew(nn.Module):
    def forward(self, x, y):
        o = torch.empty_like(x)
        n = x.numel()
        _kernel[(triton.cdiv(n, 256),)](x, y, o, n, BLOCK=256)
        return o
"""


def test_libdevice_without_tl_spelling_verifies_on_the_cpu(cpu_verifier, tmp_path):
    path = tmp_path / "p.py"
    path.write_text(PROBLEM)
    verdict = cpu_verifier.verify(read_problem(str(path)), KERNEL, "k.py")
    assert verdict.status == "ok", (verdict.status, verdict.message)


def test_a_wrong_libdevice_kernel_is_still_a_mismatch(cpu_verifier, tmp_path):
    path = tmp_path / "p.py"
    path.write_text(PROBLEM)
    wrong = KERNEL.replace("libdevice.atan2(x, y)", "libdevice.atan2(y, x)")
    verdict = cpu_verifier.verify(read_problem(str(path)), wrong, "k.py")
    assert verdict.status == "mismatch", (verdict.status, verdict.message)
