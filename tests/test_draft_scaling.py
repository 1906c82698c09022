"""Issue 33, whole networks: a draft job's work on the GPU grows with the kernels of a network,
not with the kernels times the modules and drafts it times them in.

- `tools.draft.launch_configs.load_module` shares kernels between the modules a draft job
  loads (convolution picks, GEMM tiles, each launch-config variant, the epilogue check, the
  sized path): the same kernel is one object, compiled and autotuned once. Checked with real
  `@triton.jit` objects (no interpreter; nothing is launched, so no GPU is needed).
- A CUDA draft that tries the sized path times the launch configs once, for the path the
  candidate runs at the problem's sizes, instead of once in each of its two drafts. Checked
  with the GPU steps scripted (`one_draft` stands in for Inductor; the picker is a counter).
"""

from __future__ import annotations

from types import SimpleNamespace

from tests.helpers import run_json_script

SHARING = r"""
import json, os, sys, tempfile
os.environ.pop("TRITON_INTERPRET", None)  # real @triton.jit objects: what a GPU job loads
import torch
from tools.draft import launch_configs as lc
from tools.kernels.triton_conv import candidate_source
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction


def is_kernel(v):
    return isinstance(v, (JITFunction, Autotuner))


def load(source, workdir, name):
    try:
        return lc.load_module(source, workdir, name, share=True)  # as the draft's pickers do
    except TypeError:  # a load_module that cannot share
        return lc.load_module(source, workdir, name)


KERNELS = '''
import torch
import triton
import triton.language as tl
SCALE = SCALE_VALUE


@triton.jit
def triton_poi_fused_relu_0(in_ptr, out_ptr, n, XBLOCK: tl.constexpr):
    offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    x = tl.load(in_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * SCALE, mask=offs < n)


@triton.jit
def triton_poi_fused_add_1(in_ptr, out_ptr, n, XBLOCK: tl.constexpr):
    offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    x = tl.load(in_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x + 1.0, mask=offs < n)


def call(args):
    x, = args
    buf0 = torch.empty_like(x)
    triton_poi_fused_relu_0[(1,)](x, buf0, x.numel(), XBLOCK=1024, num_warps=4)
    buf1 = torch.empty_like(x)
    triton_poi_fused_add_1[(1,)](buf0, buf1, x.numel(), XBLOCK=1024, num_warps=4)
    return (buf1,)
'''
network = KERNELS.replace("SCALE_VALUE", "1.0") + candidate_source()
other_scale = KERNELS.replace("SCALE_VALUE", "2.0") + candidate_source()
variant = lc.with_config(network, "triton_poi_fused_add_1", {"XBLOCK": 512, "num_warps": 8})
assert variant != network

out = {}
for share in (False, True):
    lc.SHARE_KERNELS = share
    getattr(lc, "clear_shared_kernels", lambda: None)()
    with tempfile.TemporaryDirectory() as workdir:
        # the modules a draft job loads for one draft: the picks, the launch-config draft and
        # 12 variants, the epilogue check, the sized path's two
        mods = [load(network, workdir, f"m{i}") for i in range(4)]
        mods += [load(variant, workdir, f"v{i}") for i in range(12)]
        names = [n for n, v in vars(mods[0]).items() if is_kernel(v)]
        objects = {id(getattr(m, n)) for m in mods for n in names}
        scaled = load(other_scale, workdir, "scaled")
    out["share" if share else "apart"] = {
        "modules": len(mods),
        "kernels": len(names),
        "objects": len(objects),
        "autotuners": sum(type(getattr(mods[0], n)).__name__ == "Autotuner" for n in names),
        "variant_same": all(getattr(mods[-1], n) is getattr(mods[0], n) for n in names),
        "scaled_relu_same": scaled.triton_poi_fused_relu_0 is mods[0].triton_poi_fused_relu_0,
        "scaled_add_same": scaled.triton_poi_fused_add_1 is mods[0].triton_poi_fused_add_1,
    }
json.dump(out, open(sys.argv[1], "w"))
"""


def test_kernels_are_shared_between_the_modules_of_a_draft_job(tmp_path):
    out = run_json_script(SHARING, tmp_path / "o.json", tmp_path / "o.json", interpret=False)
    apart, share = out["apart"], out["share"]
    # the draft's own two kernels and the convolution library's, autotuners among them
    assert share["kernels"] >= 10 and share["autotuners"] >= 2
    # each module its own objects: every kernel compiles (and autotunes) once a module
    assert apart["objects"] == apart["kernels"] * apart["modules"]
    assert not apart["variant_same"]
    # shared: one object a kernel, whatever the module (a launch-config variant changes only
    # the host code's launch keywords)
    assert share["objects"] == share["kernels"]
    assert share["variant_same"]
    # a kernel that reads a global of another value is another kernel; the rest is shared
    assert not share["scaled_relu_same"] and share["scaled_add_same"]


DYNAMIC = """
def call(args):
    triton_poi_fused_relu_0[grid](x, XBLOCK=512, num_warps=8)

class ModelNew:
    pass
"""
COMBINED = (
    DYNAMIC
    + """
def call_sized(args):
    triton_poi_fused_relu_0_sized[grid](x, XBLOCK=512, num_warps=8)
"""
)


def _scripted_gpu_draft(monkeypatch, taken: bool) -> list[dict]:
    """draft_candidate on "cuda" with Inductor and the timings scripted: `one_draft` gives a
    dynamic or static draft of one pointwise kernel through the real `_picked_on_the_gpu`,
    the sized path's choice is `taken`, and every launch-config timing is recorded."""
    import torch
    import triton
    import triton.language as tl

    import tools.draft.job as job
    import tools.draft.launch_configs as lc
    import tools.draft.sized as sized
    import tools.draft.steps as steps
    from tools.draft.kernels import Kernel
    from tools.draft.result import DraftResult

    @triton.jit
    def k0(x_ptr, n, XBLOCK: tl.constexpr):
        pass

    configs = [triton.Config({"XBLOCK": b}, num_warps=w) for b, w in ((1024, 4), (512, 8))]
    timed: list[dict] = []

    def fake_pick(source, candidates, current, init_inputs, inputs, device, **kw):
        timed.append({"kernels": sorted(candidates), "source": source})
        return source, [f"timed {sorted(candidates)}"]

    def fake_draft(problem, device, dynamic, settings, notes, conv_from=None, deferred=None):
        kernel = Kernel("triton_poi_fused_relu_0", "", SimpleNamespace(fn=k0, configs=configs))
        kernel.config = configs[1]
        host = SimpleNamespace(gemms=[], launched=["triton_poi_fused_relu_0"])
        phases = steps._Phases()
        extra = {} if deferred is None else {"deferred": deferred}
        source = steps._picked_on_the_gpu(
            DYNAMIC if dynamic else DYNAMIC.replace("x)", "x, 7)"),
            problem, device, {kernel.name: kernel}, host, "", conv_from, notes, phases, **extra,
        )  # fmt: skip
        return DraftResult(
            source=source, mixed=False, library_calls=[], kernels=[kernel.name],
            notes=notes + [phases.note("dynamic" if dynamic else "static")], dynamic=dynamic,
        )  # fmt: skip

    def fake_sized(dynamic, static, init_inputs, inputs, device, **kw):
        return (COMBINED, ["sized path taken"]) if taken else (dynamic, ["sized path not taken"])

    problem = SimpleNamespace(module=SimpleNamespace(get_init_inputs=lambda: []), inputs=[])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(job, "load_problem", lambda source, device: problem)
    monkeypatch.setattr(job, "one_draft", fake_draft)
    monkeypatch.setattr(sized, "pick_sized_path", fake_sized)
    monkeypatch.setattr(lc, "pick_configs", fake_pick)
    result = job.draft_candidate("unused", device="cuda")
    return timed, result


def test_launch_configs_are_timed_once_for_the_sized_path_taken(monkeypatch):
    timed, result = _scripted_gpu_draft(monkeypatch, taken=True)
    # once, not once a draft (dynamic, then static), and for the kernels the candidate runs
    # at the problem's sizes: the static draft's, under their names in the two-path file
    assert [t["kernels"] for t in timed] == [["triton_poi_fused_relu_0_sized"]]
    assert timed[0]["source"] == COMBINED and result.source == COMBINED
    assert any(n.startswith("final draft took ") for n in result.notes)


def test_launch_configs_are_timed_once_for_the_dynamic_path_kept(monkeypatch):
    timed, result = _scripted_gpu_draft(monkeypatch, taken=False)
    assert [t["kernels"] for t in timed] == [["triton_poi_fused_relu_0"]]
    assert timed[0]["source"] == DYNAMIC == result.source


def _host_code(n: int, keywords: str) -> str:
    """The host code of a network of `n` convolutions, each followed by a pointwise launch."""
    lines = ["def call(args):", "    buf0 = args[0]"]
    for i in range(n):
        lines.append(
            f"    buf{i + 1} = triton_convolution(buf{i}, w{i}, None, stride=(1, 1), "
            f"padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), "
            f"groups=1{keywords})"
        )
        lines.append(f"    triton_poi_fused_relu_{i}[grid(16)](buf{i + 1}, 16, XBLOCK=16)")
    return "\n".join(lines + [f"    return (buf{n},)"]) + "\n"


def test_the_static_draft_gets_the_convolution_picks_in_one_pass(monkeypatch):
    """The sized path's static draft copies the dynamic draft's convolution picks
    (`sized.copy_conv_keywords`); parsing the draft again for each call was quadratic in the
    convolutions (5.2 CPU s at 104 calls, 23 s at 208, benchmarks/results/cpu/
    level3_draft_time.md)."""
    import tools.core.pyast as pyast
    from tools.draft import sized

    picked = _host_code(40, ", precision='bf16x3', X_SPLIT=True")
    target = _host_code(40, "")
    parses = []
    real = pyast.parse
    monkeypatch.setattr(pyast, "parse", lambda *a, **k: parses.append(1) or real(*a, **k))
    out = sized.copy_conv_keywords(picked, target)
    assert out.count("precision='bf16x3', X_SPLIT=True") == 40
    assert out.replace(", precision='bf16x3', X_SPLIT=True", "") == target
    assert len(parses) <= 3  # the two drafts once each, not once a call
