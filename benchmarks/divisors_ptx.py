"""PTX of a drafted kernel with run-time divisors against the same kernel with constexpr copies
(`tools.draft.kernels._divisors_as_constexpr`), compiled for sm_90 without a GPU.

    python benchmarks/divisors_ptx.py DRAFT.py KERNEL_NAME ks0=65523 ks1=65536 [...]

DRAFT.py is a compiler draft (a kernel.py of a bench directory); the `ksN=` values are the sizes
the kernel divides by at the problem's published size; `NAME:TYPE` gives an argument's type where
the default (`*fp32` for `*_ptr*`, else `i32`) is wrong (`in_ptr4:fp32`, a scalar). Prints, for each form, the PTX's
instruction count in the kernel and its integer divisions and remainders (`div.s32`, `rem.s32`,
64-bit too). This shows what the rewrite changes in the compiled code; it is not a timing.
"""

from __future__ import annotations

import re
import sys
import tempfile


def main(argv: list[str]) -> int:
    import importlib.util
    import os

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tools.draft.kernels import _divisors_as_constexpr

    path, name, *rest = argv
    values = {k: int(v) for k, v in (a.split("=") for a in rest if "=" in a)}
    types = dict(a.split(":") for a in rest if ":" in a)  # `in_ptr4:fp32`: a scalar argument
    text = open(path).read()
    kernel = re.search(
        rf"^@triton\.jit[^\n]*\ndef {name}\(.*?(?=^@triton|^def |^class |\Z)", text, re.M | re.S
    ).group(0)
    # The drafts of session 8 predate the rewrite: undo it if the file already has it.
    plain = re.sub(r", KS\d+ : tl\.constexpr", "", kernel)
    plain = re.sub(r"\bKS(\d+)\b", r"ks\1", plain)
    constexpr, used = _divisors_as_constexpr(plain, name)
    helpers = "\n".join(
        m.group(0)
        for m in re.finditer(r"^@triton\.jit\ndef (th_\w+|libdevice_\w+)\(.*?(?=^@triton|^def |^class |\Z)", text, re.M | re.S)
    )  # fmt: skip
    header = (
        "import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n"
    )
    rows = []
    with tempfile.TemporaryDirectory() as d:
        forms = (
            ("run-time divisors", plain, {}),
            ("constexpr divisors", constexpr, {f"KS{k[2:]}": values[k] for k in used}),
        )
        for label, src, extra in forms:
            file = os.path.join(d, f"k_{len(rows)}.py")
            with open(file, "w") as f:
                f.write(header + helpers + "\n" + src)
            spec = importlib.util.spec_from_file_location(f"k{len(rows)}", file)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            jit = getattr(mod, name)
            sig, consts = {}, {}
            for p in jit.params:
                if p.is_constexpr:
                    consts[p.name] = extra.get(p.name, 512 if p.name == "XBLOCK" else 1)
                    sig[p.name] = "constexpr"
                elif p.name in types:
                    sig[p.name] = types[p.name]
                elif "_ptr" in p.name:
                    sig[p.name] = "*fp32"
                else:
                    sig[p.name] = "i32"
            where = {(jit.arg_names.index(k),): v for k, v in consts.items()}
            src_ast = ASTSource(fn=jit, signature=sig, constexprs=where)
            target = GPUTarget("cuda", 90, 32)
            ptx = triton.compile(src_ast, target=target, options={"num_warps": 8}).asm["ptx"]
            insts = [ln for ln in ptx.splitlines() if re.match(r"\s+(@%p\d+ )?[a-z]", ln)]
            divs = [ln for ln in insts if re.search(r"\b(div|rem)\.(s|u)(32|64)\b", ln)]
            rows.append((label, len(insts), len(divs)))
    print(
        f"{path}: {name}, divisors {', '.join(used)} at {', '.join(f'{k}={values[k]}' for k in used)}"
    )
    for label, n, d in rows:
        print(f"  {label:20s} {n:5d} PTX instructions, {d} integer div/rem")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
