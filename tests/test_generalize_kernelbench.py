"""--generalize over KernelBench level 1's own layouts (issue 15, item 5), found by
benchmarks/generalize_level1.py: shape tuples (`input_shape = (32768,)` read as
`torch.rand(batch_size, *input_shape)`: scans, KL divergence, triplet loss) are sizes too, and
a problem whose sizes must divide each other (GroupNorm's channels by its groups) is checked at
sizes it accepts instead of being skipped; the drafter's traces keep sizes symbolic that ATen
ops took as plain ints (max_pool1d's length, group_norm's group count). Plan-level only, with an
in-process stand-in for the verifier: seconds, no drafting, no kernels."""

from __future__ import annotations

import textwrap

from tools.core.errors import ProblemError
from tools.core.problem import Problem, problem_from_source
from tools.core.results import Verdict
from tools.orchestrate.generalize import generalization_plan, generalize

SCAN = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim

        def forward(self, x):
            return torch.cumsum(x, dim=self.dim)

    batch_size = 32768
    input_shape = (32768,)
    other_shape = (8192 * 2, 1)
    dim = 1

    def get_inputs():
        return [torch.rand(batch_size, *input_shape), torch.rand(*other_shape)]

    def get_init_inputs():
        return [dim]
    """
)

GROUP_NORM = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, num_features: int, num_groups: int):
            super().__init__()
            self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

        def forward(self, x):
            return self.gn(x)

    batch_size = 4
    features = 16
    num_groups = 8
    dim1 = 6

    def get_inputs():
        return [torch.rand(batch_size, features, dim1)]

    def get_init_inputs():
        return [features, num_groups]
    """
)


def test_literal_shape_tuples_are_varied():
    plan = generalization_plan(problem_from_source(SCAN))
    assert plan.sizes == {"batch_size": 16385, "input_shape": (16385,), "other_shape": (8193, 1)}
    assert plan.input_sizes == plan.sizes
    varied = problem_from_source(SCAN).with_sizes(**plan.sizes)
    assert "input_shape = (16385,)" in varied.source
    assert "other_shape = (8193, 1)" in varied.source


def _reference_only(problem: Problem) -> Verdict:
    """Stands in for the verifier: runs the reference at the problem's sizes (ProblemError when
    it does not accept them, as the verifier raises) and calls the candidate correct."""
    namespace: dict = {}
    exec(compile(problem.source, "<problem>", "exec"), namespace)  # noqa: S102 (test's own code)
    try:
        namespace["Model"](*namespace["get_init_inputs"]())(*namespace["get_inputs"]())
    except Exception as exc:
        raise ProblemError(f"the reference fails: {exc}") from exc
    return Verdict(status="ok", compiled=True, correct=True, message="correct")


def test_sizes_that_must_divide_are_checked_at_sizes_the_problem_accepts():
    problem = problem_from_source(GROUP_NORM)
    tried: list[str] = []

    def verify_at(p: Problem) -> Verdict:
        tried.append(", ".join(f"{k}={v}" for k, v in p.size_constants.items()))
        return _reference_only(p)

    verdict = generalize(problem, _reference_only(problem), verify_at)
    notes = " | ".join(verdict.evidence.notes)
    # 9 channels in 5 groups is rejected; 8 in 4 is checked (it was "skipped" before)
    assert "batch_size=3, features=9, num_groups=5, dim1=4" in tried[0]
    assert "generalisation check passed at batch_size=2, features=8, num_groups=4, dim1=3" in notes
    assert "skipped" not in notes


def test_max_pool1d_length_stays_symbolic_in_a_dynamic_trace():
    """ATen's max_pool1d read the length as a plain integer: level1/41's dynamic draft had
    `x.shape[2] == 32` fixed. Traced through the drafter's patch, one graph serves two lengths
    (dynamo only, eager backend: no Inductor, no kernels)."""
    import torch

    from tools.draft.inductor_patches import max_pool1d_as_2d

    graphs = []

    def backend(gm, example_inputs):  # noqa: ANN001, ANN202
        graphs.append(gm)
        return gm.forward

    pool = torch.nn.MaxPool1d(kernel_size=8, stride=1, padding=4, dilation=3)
    reference = torch.max_pool1d  # ATen's, before the patch
    torch._dynamo.reset()
    with max_pool1d_as_2d():
        compiled = torch.compile(pool, backend=backend, dynamic=True, fullgraph=True)
        for length in (32, 17):
            x = torch.rand(3, 5, length)
            assert torch.equal(compiled(x), reference(x, 8, 1, 4, 3))
    torch._dynamo.reset()
    assert len(graphs) == 1, "the length was specialised: a second graph for length 17"


def test_group_norm_group_count_stays_symbolic_in_a_dynamic_trace():
    """ATen's native_group_norm took the group count as a plain int: level1/35's dynamic draft
    had `self.gn.num_groups == 8` fixed and failed the generalisation check at 4 groups. Traced
    through the drafter's patch (with the drafter's dynamo settings), one graph serves 8 and 4
    groups, with GroupNorm's values (dynamo only, eager backend: no Inductor, no kernels)."""
    import torch
    import torch.nn.functional as F

    from tools.draft.inductor_patches import group_norm_with_symbolic_groups

    graphs = []

    def backend(gm, example_inputs):  # noqa: ANN001, ANN202
        graphs.append(gm)
        return gm.forward

    reference = F.group_norm  # ATen's, before the patch
    norm = torch.nn.GroupNorm(8, 16)
    torch.nn.init.normal_(norm.weight)
    torch.nn.init.normal_(norm.bias)
    torch._dynamo.reset()
    settings = {"allow_unspec_int_on_nn_module": True, "force_parameter_static_shapes": False}
    with torch._dynamo.config.patch(settings), group_norm_with_symbolic_groups():
        compiled = torch.compile(norm, backend=backend, dynamic=True, fullgraph=True)
        for groups, shape in ((8, (3, 16, 5)), (4, (2, 16, 7))):
            norm.num_groups = groups
            x = torch.rand(*shape)
            expected = reference(x, groups, norm.weight, norm.bias, norm.eps)
            torch.testing.assert_close(compiled(x), expected, atol=1e-5, rtol=1e-5)
    torch._dynamo.reset()
    assert len(graphs) == 1, "the group count was specialised: a second graph for 4 groups"


CONV = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size):
            super().__init__()
            self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, bias=False)

        def forward(self, x):
            return self.conv2d(x)

    batch_size = 2
    in_channels = 4
    out_channels = 4
    kernel_size = 3
    height = 6
    width = 5

    def get_inputs():
        return [torch.rand(batch_size, in_channels, height, width)]

    def get_init_inputs():
        return [in_channels, out_channels, kernel_size]
    """
)


def test_dynamic_conv_draft_has_no_channels_last_copies_of_fixed_size():
    """level1/55: Inductor's layout optimisation copied input and weight to channels-last in
    buffers with the channel counts fixed ((s77, 8, h, w)), so the draft failed at other channel
    counts; without it `triton_convolution` gets the inputs themselves."""
    from tools.draft import draft_candidate

    result = draft_candidate(CONV, device="cpu")
    assert result.dynamic
    call = result.source[result.source.index("def call(") :]
    assert "empty_strided((s" not in call.split("triton_convolution(")[0], call[:800]
    assert not [k for k in result.kernels if "convolution" in k and k.startswith("triton_")]


def test_direct_conv_kernel_takes_a_plane_a_program_in_the_interpreter(monkeypatch):
    """level1/75 (grouped transposed, 2 output channels a group: the direct kernel) timed out in
    the interpreter, whose cost is per program: blocks of 64 positions made 14 programs a
    channel plane of 850. Like on the GPU, up to 1024 positions are one block (the launch is
    recorded, not run)."""
    import torch

    from tools.kernels import conv_direct, triton_conv

    grids = []

    class Launch:
        def __getitem__(self, grid):  # noqa: ANN001, ANN204
            grids.append(grid)
            return lambda *args, **kwargs: None

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(conv_direct, "_conv_direct_kernel", Launch())
    x, weight = torch.rand(3, 8, 12, 12), torch.rand(8, 2, 3, 5)  # 8 -> 8 channels, 4 groups
    y = triton_conv.triton_convolution(x, weight, None, (2, 3), (1, 2), (2, 1), True, 0, 4)
    assert tuple(y.shape) == (3, 8, 25, 34)
    assert grids == [(3 * 8,)], grids  # one program per (sample, channel): 850 positions


def test_forward_conv_group_count_follows_the_channels():
    """level1/82 (depthwise, groups=in_channels): ATen's convolution takes the group count as a
    plain int, so the dynamic draft called `triton_convolution(..., groups=8)` and ran 5
    channels in 8 groups at other sizes. A forward conv's count is read from its tensors; a
    transposed conv's stays (its weight does not hold it)."""
    import ast

    import torch

    from tools.draft.rewrite import HostRewriter, convolutions_in_triton

    call = ast.parse(
        "def call(args):\n"
        "    buf0 = torch.convolution(arg8_1, arg3_1, stride=(1, 1), padding=(0, 0),"
        " dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=8, bias=None)\n"
        "    buf1 = torch.convolution(buf0, arg4_1, None, (2, 2), (1, 1), (1, 1), True,"
        " (0, 0), 4)\n"
    ).body[0]
    host = HostRewriter({}, {}, set())
    host.library_calls[:] = ["convolution"]
    assert convolutions_in_triton(call, host)
    forward, transposed = (ast.unparse(s.value) for s in call.body)
    assert "groups=arg8_1.shape[1] // arg3_1.shape[1]" in forward, forward
    assert transposed.endswith("(0, 0), 4)"), transposed
    x, weight = torch.rand(2, 5, 7, 7), torch.rand(5, 1, 3, 3)  # depthwise at 5 channels
    groups = ast.parse(forward, mode="eval").body.keywords[-2].value
    assert eval(ast.unparse(groups), {"arg8_1": x, "arg3_1": weight}) == 5  # noqa: S307
