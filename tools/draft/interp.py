"""Rewrites for the Triton interpreter (CPU path): libdevice calls it cannot run, as `tl` calls or
small `@triton.jit` helpers, and Inductor helpers it runs too slowly, as `tl` built-ins."""

from __future__ import annotations

# libdevice functions the Triton interpreter cannot run, as `tl` calls (same meaning) ...
LIBDEVICE_AS_TL = {
    "exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2",
    "rsqrt": "tl.rsqrt", "sin": "tl.sin", "cos": "tl.cos", "abs": "tl.abs", "fabs": "tl.abs",
    "floor": "tl.floor", "ceil": "tl.ceil", "erf": "tl.erf", "fma": "tl.fma", "fmin": "tl.minimum",
    "fmax": "tl.maximum", "div_rn": "tl.div_rn", "llabs": "tl.abs",
}  # fmt: skip
# ... or as small @triton.jit helpers emitted into the candidate (name -> body over x / x, y).
# `sqrt` is one because `tl.sqrt_rn` takes fp32 only: a scale of fp64 from a size
# (`1.0 / math.sqrt(k.size(-1))` in a dynamic draft, level3/50) failed to compile ("Expected
# dtype ['fp32'] but got fp64"); `tl.sqrt` of fp64 is correctly rounded (fp32's is not). One
# `return` at the end: Triton's compiler refuses a `return` inside an `if` (the interpreter
# does not).
LIBDEVICE_AS_HELPER = {
    "sqrt": ("x", "if x.dtype == tl.float64:\n        r = tl.sqrt(x)\n    else:\n        r = tl.sqrt_rn(x)\n    return r"),
    "tanh": ("x", "e = tl.exp(-2.0 * tl.abs(x))\n    t = (1.0 - e) / (1.0 + e)\n    return tl.where(x < 0, -t, t)"),
    "sinh": ("x", "return 0.5 * (tl.exp(x) - tl.exp(-x))"),
    "cosh": ("x", "return 0.5 * (tl.exp(x) + tl.exp(-x))"),
    "tan": ("x", "return tl.sin(x) / tl.cos(x)"),
    "expm1": ("x", "return tl.where(tl.abs(x) < 1e-5, x + 0.5 * x * x, tl.exp(x) - 1.0)"),
    "log1p": ("x", "return tl.where(tl.abs(x) < 1e-4, x - 0.5 * x * x, tl.log(1.0 + x))"),
    "trunc": ("x", "return tl.where(x < 0, tl.ceil(x), tl.floor(x))"),
    "nearbyint": ("x", "r = tl.floor(x + 0.5)\n    return tl.where((r - x == 0.5) & (r - 2.0 * tl.floor(r * 0.5) != 0.0), r - 1.0, r)"),
    "rint": ("x", "r = tl.floor(x + 0.5)\n    return tl.where((r - x == 0.5) & (r - 2.0 * tl.floor(r * 0.5) != 0.0), r - 1.0, r)"),
    "isnan": ("x", "return x != x"),
    "isinf": ("x", "return tl.abs(x) == float('inf')"),
    "signbit": ("x", "return x < 0"),
    "asinh": ("x", "return tl.where(x < 0, -1.0, 1.0) * tl.log(tl.abs(x) + tl.sqrt(x * x + 1.0))"),
    "acosh": ("x", "return tl.log(x + tl.sqrt(x * x - 1.0))"),
    "atanh": ("x", "return 0.5 * tl.log((1.0 + x) / (1.0 - x))"),
    "pow": ("x, y", (
        "r = tl.exp2(y * tl.log2(tl.abs(x)))\n"
        "    y_is_int = y == tl.floor(y)\n"
        "    y_is_odd = y_is_int & (y - 2.0 * tl.floor(y * 0.5) == 1.0)\n"
        "    r = tl.where((x < 0) & y_is_odd, -r, r)\n"
        "    r = tl.where((x < 0) & (~y_is_int), float('nan'), r)\n"
        "    return tl.where(y == 0, 1.0, r)"
    )),
}  # fmt: skip


# triton_helpers functions whose Inductor versions reduce through `tl.reduce` with a Triton
# combine function: the interpreter runs that combine per element in Python (softmax 37x1000:
# 61 s, against 2 s with `tl.max`). On the interpreter path they become the `tl` built-ins.
# `tl.max`/`tl.min` do not propagate NaN the way Inductor's helpers do.
INTERPRETER_HELPERS = {
    "maximum": "def th_maximum(a, b):\n    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)\n",
    "minimum": "def th_minimum(a, b):\n    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)\n",
    "max2": "def th_max2(a, dim):\n    return tl.max(a, dim)\n",
    "min2": "def th_min2(a, dim):\n    return tl.min(a, dim)\n",
}
