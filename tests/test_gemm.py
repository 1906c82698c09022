"""This project's GEMM template (tools/kernels/gemm_template.py) and the tuner's GEMM search (tools.compile.tune).

The template runs under the Triton interpreter in ONE subprocess (TRITON_INTERPRET must be set
before the kernels are defined): mm/addmm/bmm, transposed and non-contiguous operands, split-K,
each precision, against a float64 reference at fp32 tolerance. The interpreter's `tl.dot` is
exact, so this checks indexing, masks, split-K sums and the epilogue; tf32x3 must stay within fp32
tolerance even where the interpreter emulates TF32. Every tuner variant of a drafted-style
candidate is run too: a tile config, split or precision that broke the kernel would show here.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from tools.compile import tune
from tools.kernels.gemm_template import DEFAULT_CONFIG, GEMM_SOURCE, call_for

# A candidate the way the compiler drafter writes one for `addmm` (Linear): gemm at the call site.
CANDIDATE = (
    "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n"
    + GEMM_SOURCE
    + """

class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = nn.Linear(k, n)

    def forward(self, x):
        out = torch.empty((x.shape[0], self.linear.weight.shape[0]), device=x.device)
        w = self.linear.weight
        return """
    + call_for(
        "addmm",
        ["self.linear.bias", "x", "w.t()"],
        {"alpha": "1", "beta": "1", "out": "out"},
    )
    + "\n"
)

SCRIPT = r"""
import json, os, sys, types
import torch, triton, triton.language as tl

def load(name, source, directory):
    path = os.path.join(directory, name + ".py")  # a real file: @triton.jit reads it back
    with open(path, "w") as f:
        f.write(source)
    m = types.ModuleType(name)
    exec(compile(source, path, "exec"), m.__dict__)
    return m

spec = json.load(open(sys.argv[1]))
out_dir = os.path.dirname(sys.argv[1])
g = load("gemm_template", spec["template"], out_dir)
torch.manual_seed(0)
small = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)
results = {}

def rel_err(out, ref):
    ref = ref.double()
    return ((out.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()

for prec in ("tf32x3", "ieee", "tf32"):
    a, b, bias = torch.randn(129, 75), torch.randn(75, 97), torch.randn(97)
    results[f"mm_{prec}"] = rel_err(g.gemm(a, b, precision=prec, **small), a.double() @ b.double())
    results[f"addmm_{prec}"] = rel_err(
        g.gemm(a, b, bias=bias, alpha=0.5, beta=2.0, precision=prec, **small),
        0.5 * (a.double() @ b.double()) + 2.0 * bias.double(),
    )
a, b = torch.randn(33, 1000), torch.randn(1000, 17)
for split in (0, 1, 3, 7):
    results[f"split{split}"] = rel_err(g.gemm(a, b, SPLIT_K=split, **small), a.double() @ b.double())
bias2d = torch.randn(33, 1)  # broadcast over columns
results["split4_bias"] = rel_err(
    g.gemm(a, b, bias=bias2d, SPLIT_K=4, **small), a.double() @ b.double() + bias2d.double()
)
# Inductor's bias_addmm on CUDA: a Linear's bias as an (M, N) view with row stride 0
vec = torch.randn(17)
row_bias = torch.as_strided(vec, (33, 17), (0, 1))
results["bias_addmm_rows"] = rel_err(
    g.gemm(a, b, bias=row_bias, **small), a.double() @ b.double() + vec.double()
)
at, bt = torch.randn(75, 129), torch.randn(97, 75)  # transposed views: column-major operands
results["transposed"] = rel_err(g.gemm(at.t(), bt.t(), **small), at.double().t() @ bt.double().t())
# operands whose leading stride is not a multiple of 16 (level1/8's 2949): aligned copies
g._GEMM_ALIGN_MIN = 0
au, bu = torch.randn(50, 37), torch.randn(37, 41)
results["unaligned"] = rel_err(g.gemm(au, bu, **small), au.double() @ bu.double())
results["unaligned_t"] = rel_err(g.gemm(bu.t(), au.t(), **small), bu.double().t() @ au.double().t())
aligned = g._gemm_aligned(au)
results["aligned_stride"] = float(aligned.stride() == (48, 1) and torch.equal(aligned, au))
results["aligned_t_stride"] = float(g._gemm_aligned(au.t()).stride() == (1, 48))
vec = torch.randn(37, 1)  # a matrix-vector product's (K, 1): nothing to align, no copy
results["vector_kept"] = float(g._gemm_aligned(vec) is vec)
# the contiguity hints only where a size is a multiple of 16 (the wrapped last block would
# start 16-byte loads at misaligned addresses on a GPU: level1/8's N = 5921)
class Recorded:
    def __init__(self, kernel):
        self.kernel, self.flags = kernel, []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.flags.append([kwargs.get("HINT_M"), kwargs.get("HINT_N")])
            return self.kernel[grid](*args, **kwargs)
        return launch

kernel = g._gemm_kernel
g._gemm_kernel = Recorded(kernel)
bias41 = torch.randn(41)  # with a bias: the aligned copy, no padding, no hints on 50 x 41
results["hints_unaligned_sizes"] = rel_err(
    g.gemm(au, bu, bias=bias41, **small), au.double() @ bu.double() + bias41.double()
)
a16, b16 = torch.randn(32, 37), torch.randn(37, 48)
g.gemm(a16, b16, bias=torch.randn(48), **small)
results["hints"] = g._gemm_kernel.flags
# without a bias, K and N are zero-padded to multiples of 16 (37 -> 48, 41 -> 48): N's hint
# holds then, and the output is copied back at its own width
g._gemm_kernel = Recorded(kernel)
outp = torch.full((50, 41), float("nan"))
results["padded"] = rel_err(g.gemm(au, bu, out=outp, alpha=0.5, **small), 0.5 * (au.double() @ bu.double()))
results["padded_out_kept"] = float(g.gemm(au, bu, out=outp, **small) is outp)
results["padded_hints"] = g._gemm_kernel.flags
g._gemm_kernel = kernel
g._GEMM_ALIGN_MIN = 1 << 30
# matrix-vector products (one column): the GEMV kernel, exact fp32 products
gemv = Recorded(g._gemv_kernel)
g._gemv_kernel, kernel_before = gemv, g._gemm_kernel
g._gemm_kernel = Recorded(kernel_before)
av, xv, bv = torch.randn(37, 1000), torch.randn(1000, 1), torch.randn(37, 1)
results["gemv"] = rel_err(g.gemm(av, xv, **small), av.double() @ xv.double())
results["gemv_addmm"] = rel_err(
    g.gemm(av, xv, bias=bv, alpha=0.5, beta=2.0), 0.5 * (av.double() @ xv.double()) + 2.0 * bv.double()
)
results["gemv_row_bias"] = rel_err(  # a Linear to one output: bias (1,) broadcast over rows
    g.gemm(av, xv, bias=torch.as_strided(bv[0], (37, 1), (0, 1))), av.double() @ xv.double() + bv[0].double()
)
at = torch.randn(1000, 37)
results["gemv_transposed_a"] = rel_err(g.gemm(at.t(), xv), at.double().t() @ xv.double())
a3v, x3v = torch.randn(3, 20, 300), torch.randn(3, 300, 1)
results["gemv_bmm"] = rel_err(g.gemm(a3v, x3v), a3v.double() @ x3v.double())
outv = torch.empty(37, 1)
results["gemv_out"] = float(g.gemm(av, xv, out=outv) is outv and torch.allclose(outv, av @ xv, atol=1e-4))
results["gemv_launches"] = [len(gemv.flags), len(g._gemm_kernel.flags)]  # GEMV only
g._gemv_kernel, g._gemm_kernel = gemv.kernel, kernel_before
a3, b3 = torch.randn(3, 20, 30), torch.randn(3, 30, 10)
results["bmm"] = rel_err(g.gemm(a3, b3, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16), a3.double() @ b3.double())
out = torch.empty(129, 97)
a, b = torch.randn(129, 75), torch.randn(75, 97)
results["out_is_written"] = float(g.gemm(a, b, out=out, **small) is out)

cand = load("candidate", spec["candidate"], out_dir)
variants = {}
x = torch.randn(19, 70)
for desc, code in spec["variants"]:
    m = load("variant", code, out_dir).ModelNew(70, 45)
    w, bias = m.linear.weight.detach().double(), m.linear.bias.detach().double()
    variants[desc] = rel_err(m(x), x.double() @ w.t() + bias)
results["variants"] = variants
json.dump(results, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gemm")
    variants = tune.gemm_variants(CANDIDATE, "tiles", limit=50)
    variants += tune.gemm_variants(CANDIDATE, "split_precision", limit=50)
    spec = tmp / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "template": "import torch\nimport triton\nimport triton.language as tl\n"
                + GEMM_SOURCE,
                "candidate": CANDIDATE,
                "variants": variants,
            }
        )
    )
    out = tmp / "out.json"
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(spec), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize(
    "case",
    ["mm_tf32x3", "mm_ieee", "addmm_tf32x3", "addmm_ieee", "split0", "split1", "split3",
     "split7", "split4_bias", "bias_addmm_rows", "transposed", "bmm", "unaligned",
     "unaligned_t", "gemv", "gemv_addmm", "gemv_row_bias", "gemv_transposed_a", "gemv_bmm"],
)  # fmt: skip
def test_template_matches_float64_at_fp32_tolerance(interpreted, case):
    assert interpreted[case] < 1e-5, f"{case}: relative error {interpreted[case]:.2e}"


def test_template_writes_into_the_given_output(interpreted):
    assert interpreted["out_is_written"] == 1.0


def test_unaligned_operands_are_copied_to_aligned_strides(interpreted):
    assert interpreted["aligned_stride"] == 1.0  # 37 floats apart -> 48, same values
    assert interpreted["aligned_t_stride"] == 1.0  # a transposed view: its columns 48 apart
    assert interpreted["vector_kept"] == 1.0


def test_contiguity_hints_only_for_sizes_that_are_multiples_of_16(interpreted):
    # 50x41 output: neither hint (an aligned copy with hints faulted on the H200); 32x48: both
    assert interpreted["hints"] == [[False, False], [True, True]]
    assert interpreted["hints_unaligned_sizes"] < 1e-5


def test_unaligned_sizes_without_bias_are_zero_padded(interpreted):
    # 50x37 @ 37x41: computed as 50x48 @ 48x48 (N's hint on), written back at 50x41
    assert interpreted["padded"] < 1e-5
    assert interpreted["padded_out_kept"] == 1.0
    assert interpreted["padded_hints"] == [[False, True], [False, True]]


def test_every_tuner_variant_stays_correct(interpreted):
    variants = interpreted["variants"]
    assert len(variants) >= len(tune.GEMM_TILES) + 4
    bad = {d: e for d, e in variants.items() if e > 1e-5}
    assert not bad, bad


def test_tuner_finds_the_gemm_call_and_varies_whole_tiles():
    sites = tune.gemm_sites(CANDIDATE)
    assert list(sites) == [0]
    assert {k: v.value for k, v in sites[0].items()} == DEFAULT_CONFIG
    tiles = tune.gemm_variants(CANDIDATE, "tiles", limit=50)
    assert len(tiles) == len(tune.GEMM_TILES) - 1  # the first tile is the default
    for desc, code in tiles:
        ast.parse(code)
        changed = [a for a, b in zip(CANDIDATE.splitlines(), code.splitlines()) if a != b]
        assert len(changed) == 1 and "gemm(" in changed[0], desc
    # other launches are left to one_at_a_time, which leaves the GEMM call alone
    for desc, _ in tune.one_at_a_time(CANDIDATE, limit=50):
        assert not any(k in desc for k in ("precision", "SPLIT_K", "GROUP_M")), desc


def test_precision_variants_are_named():
    stage = tune.gemm_variants(CANDIDATE, "split_precision", limit=50)
    descs = [d for d, _ in stage]
    assert "gemm#0: precision=tf32" in descs and "gemm#0: precision=ieee" in descs
    assert any("SPLIT_K=16" in d for d in descs)
    tf32 = dict(stage)["gemm#0: precision=tf32"]
    assert tune.precisions(tf32) == ["tf32"] and tune.precisions(CANDIDATE) == ["tf32x3"]


def test_call_for_maps_inductor_extern_calls():
    assert call_for("mm", ["a", "b"], {"out": "buf0"}).startswith("gemm(a, b, out=buf0, BLOCK_M=")
    addmm = call_for("addmm", ["bias", "a", "b"], {"alpha": "1", "beta": "2", "out": "o"})
    assert addmm.startswith("gemm(a, b, bias=bias, alpha=1, beta=2, out=o,")
    assert "precision='tf32x3'" in addmm
    bias_addmm = call_for("bias_addmm", ["reinterpret_tensor(b0, (8, 4), (0, 1), 0)", "a", "w"], {})
    assert bias_addmm.startswith("gemm(a, w, bias=reinterpret_tensor(b0, (8, 4), (0, 1), 0),")
    with pytest.raises(ValueError):
        call_for("convolution", ["x", "w"], {})


LINEAR_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = nn.Linear(k, n)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.randn(48, 512)]


def get_init_inputs():
    return [512, 40]
"""


def test_verification_keeps_tf32x3_and_refuses_plain_tf32(tmp_path):
    """The tuner's precision variants go through verification: under the interpreter's TF32
    emulation (tools.job.interp_checks) plain TF32 misses fp32's 1e-4 at K=512, tf32x3 does not."""
    from tools.core.problem import problem_from_source
    from tools.orchestrate.verify import Verifier, VerifyOptions

    path = tmp_path / "linear.py"
    path.write_text(LINEAR_PROBLEM)
    problem = problem_from_source(LINEAR_PROBLEM, str(path))
    verifier = Verifier(VerifyOptions(trials=1, timeout_s=120, device="cpu", aot_target=None))
    variants = dict(tune.gemm_variants(CANDIDATE, "split_precision", limit=50))
    assert verifier.verify(problem, CANDIDATE, "tf32x3.py").correct
    tf32 = verifier.verify(problem, variants["gemm#0: precision=tf32"], "tf32.py")
    assert not tf32.correct and tf32.status == "mismatch", tf32.message


def test_matrix_vector_products_take_the_gemv_kernel(interpreted):
    # five products with one column (plus the out= one): every launch was the GEMV kernel's
    assert interpreted["gemv_launches"] == [6, 0]
    assert interpreted["gemv_out"] == 1.0
