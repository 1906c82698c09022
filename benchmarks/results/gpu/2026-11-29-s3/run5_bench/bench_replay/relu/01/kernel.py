# ruff: noqa  (kept exactly as KernelLLM writes it: import order, unused stream0, super(ModelNew, self))
# fmt: off
import torch
import triton
import triton.language as tl
from torch._C import _cuda_getCurrentRawStream as get_raw_stream
from torch._inductor.runtime import triton_helpers
import torch.nn as nn
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda

# KernelLLM was trained on torch.compile output of torch 2.5-2.6, which exported `grid` here;
# newer torch removed it, so a fallback with the same behaviour keeps the file loadable.
try:
    from torch._inductor.runtime.triton_heuristics import grid
except ImportError:

    def grid(xnumel):
        def grid_fn(meta):
            return (triton.cdiv(xnumel, meta['XBLOCK']), 1, 1)
        return grid_fn


@triton.jit
def triton_poi_fused_relu_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xnumel = 13000
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + x0, xmask)
    tmp1 = tl.full([1], 0, tl.int32)
    tmp2 = triton_helpers.maximum(tmp1, tmp0)
    tl.store(out_ptr0 + x0, tmp2, xmask)


def call(args):
    arg0_1, = args
    args.clear()
    assert_size_stride(arg0_1, (13, 1000), (1000, 1))
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((13, 1000), (1000, 1), torch.float32)
        stream0 = get_raw_stream(0)
        triton_poi_fused_relu_0[grid(13000)](arg0_1, buf0, 13000, XBLOCK=128,
            num_warps=4, num_stages=1)
        del arg0_1
    return buf0,


class ModelNew(nn.Module):
    """
    Simple model that performs a ReLU activation.
    """

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, input_0):
        arg0_1 = input_0
        output = call([arg0_1])
        return output[0]
