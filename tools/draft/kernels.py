"""Inductor's kernels: each loaded as Inductor would (to read its launch configs), then its
source rewritten into a plain `@triton.jit` function (`KernelRewriter`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import textwrap
from collections.abc import Iterator
from typing import Any

from tools.draft.interp import INTERPRETER_HELPERS, LIBDEVICE_AS_HELPER, LIBDEVICE_AS_TL
from tools.draft.result import DraftUnsupportedError

_KERNEL_DEF = re.compile(
    r"^(?P<name>\w+) = async_compile\.triton\(\s*'(?P=name)',\s*r?'''(?P<src>.*?)'''", re.S | re.M
)


@dataclasses.dataclass
class Kernel:
    name: str
    inductor_source: str
    autotuner: Any  # CachingAutotuner: .fn (JITFunction), .configs, .triton_meta, .inductor_meta
    config: Any = None  # the triton.Config used for launches
    source: str = ""  # the rewritten plain @triton.jit source
    divisors: list[str] = dataclasses.field(default_factory=list)
    """Size arguments (`ks0`...) the kernel divides by, also passed as constexprs (`KS0`...):
    `_divisors_as_constexpr`."""


def load_kernels(wrapper: str, compiled_module: Any, workdir: str) -> dict[str, Kernel]:
    kernels = {}
    for match in _KERNEL_DEF.finditer(wrapper):
        name, src = match.group("name"), match.group("src")
        autotuner = getattr(compiled_module, name, None) if compiled_module is not None else None
        if autotuner is None:
            path = os.path.join(workdir, f"{name}.py")
            with open(path, "w") as f:
                f.write(src)
            namespace: dict[str, Any] = {"__file__": path, "__name__": f"inductor_kernel_{name}"}
            with warnings_silenced():
                exec(compile(src, path, "exec"), namespace)
            autotuner = namespace[name]
        kernels[name] = Kernel(name, src, autotuner)
    if "async_compile." in _KERNEL_DEF.sub("", wrapper).replace("async_compile.wait", ""):
        unhandled = re.findall(r"async_compile\.(\w+)\(", wrapper)
        unhandled = sorted(set(unhandled) - {"triton", "wait"})
        if unhandled:
            raise DraftUnsupportedError(
                f"Inductor emitted non-Triton kernels ({', '.join(unhandled)})"
            )
    return kernels


@contextlib.contextmanager
def warnings_silenced() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def pick_config(kernel: Kernel) -> tuple[Any, str]:
    """The launch config: the autotuner's pick when it ran (GPU), else the heuristics' first."""
    launchers = getattr(kernel.autotuner, "launchers", None) or []
    if len(launchers) == 1 and getattr(launchers[0], "config", None) is not None:
        return launchers[0].config, "autotuned"
    configs = list(getattr(kernel.autotuner, "configs", None) or [])
    if not configs:
        raise DraftUnsupportedError(f"kernel {kernel.name}: Inductor gave no launch config")
    return configs[0], f"first of {len(configs)} heuristic config(s), not benchmarked"


def kernel_params(kernel: Kernel) -> tuple[list[str], list[str]]:
    """(arguments passed at launch, `tl.constexpr` parameters set from the config) of a kernel.

    Inductor's launcher takes every parameter the `def` does not annotate `tl.constexpr`, in
    order (some of them, e.g. `xnumel == 1`, are specialised constants in its triton_meta but
    are still passed), and fills the annotated ones (XBLOCK, R0_BLOCK...) from the config.
    """
    params = kernel.autotuner.fn.params
    runtime = [p.name for p in params if not p.is_constexpr]
    constexprs = [p.name for p in params if p.is_constexpr]
    return runtime, constexprs


def _strip_inductor_scaffolding(src: str, name: str) -> str:
    """Drop the imports, `set_driver_to_*()` and `@triton_heuristics.*(...)` decorators."""
    kept = []
    lines = src.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(
            r"(import triton\b|from torch\._inductor|triton_helpers\.set_driver_to_)", line
        ):
            i += 1
            continue
        if line.startswith("@triton_heuristics."):
            depth = 0
            while i < len(lines):  # skip to the line that closes the decorator's parentheses
                depth += lines[i].count("(") - lines[i].count(")")
                i += 1
                if depth <= 0:
                    break
            continue
        kept.append(line)
        i += 1
    body = "\n".join(kept).strip() + "\n"
    if f"def {name}(" not in body:
        raise DraftUnsupportedError(f"kernel {name}: no `def {name}` in Inductor's source")
    if "triton_heuristics" in body:
        raise DraftUnsupportedError(f"kernel {name}: uses triton_heuristics beyond its decorator")
    return body


def _sizes_not_specialized(body: str, name: str) -> str:
    """`@triton.jit(do_not_specialize=[...])` for the kernel's symbolic-size arguments (`ks0`...).

    Inductor's launcher keeps them plain integers; a plain `@triton.jit` lets Triton turn one
    that happens to be 1 into a constexpr, and Inductor's `tl.broadcast_to(ks2, ...)` then fails
    to compile (Triton 3.6 on the H200, KernelBench level2/10: a Hardtanh bound of 1 passed as
    `ks2`: "'constexpr_type' object has no attribute 'is_block'").
    """
    m = re.search(rf"^@triton\.jit\s*\ndef {name}\(([^)]*)\)", body, re.M)
    if m is None:
        return body
    sizes = [p.split(":")[0].strip() for p in m.group(1).split(",")]
    sizes = [p for p in sizes if re.fullmatch(r"ks\d+", p)]
    if not sizes:
        return body
    start = m.start()
    decorator = f"@triton.jit(do_not_specialize={sizes!r})"
    return body[:start] + decorator + body[start + len("@triton.jit") :]


_DIVISOR = re.compile(r"(//|%)(\s*)(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)|[A-Za-z_]\w*)")


def _divisors_as_constexpr(body: str, name: str) -> tuple[str, list[str]]:
    """Divisions and remainders by symbolic sizes (`xindex // ks0`, `r0_index % ks0`,
    `x // (ks0*ks1)`) take constexpr copies of those sizes (`KS0`, new `tl.constexpr`
    parameters the launch passes beside `ks0`), so Triton compiles them as divisions by a
    constant (a multiply and a shift) rather than by a run-time integer.

    The draft stays size-generic: Triton compiles the kernel once per distinct value (as it
    does for any constexpr), where Inductor's static draft bakes the values in. On the H200
    (session 8) the run-time divisions cost level1/41_Max_Pooling_1D 3.93 ms against the static
    draft's 2.72 ms (`xindex // ks0`, `% ks0`). Every other use of `ks0` (products, bounds,
    `tl.broadcast_to(ks2, ...)`, which a constexpr would break) keeps the run-time argument.
    Returns the body and the sizes given constexpr copies, in parameter order."""
    m = re.search(rf"^(@triton\.jit[^\n]*\n)def {name}\((.*?)\):", body, re.M | re.S)
    if m is None:
        return body, []
    params = [p.split(":")[0].strip() for p in m.group(2).split(",")]
    sizes = {p for p in params if re.fullmatch(r"ks\d+", p)}
    if not sizes:
        return body, []
    used: set[str] = set()
    head, rest = body[: m.end()], body[m.end() :]

    def as_constexpr(k: re.Match[str]) -> str:
        if k.group(0) not in sizes:
            return k.group(0)
        used.add(k.group(0))
        return f"KS{k.group(1)}"

    def constexpr(d: re.Match[str]) -> str:
        return d.group(1) + d.group(2) + re.sub(r"\bks(\d+)\b", as_constexpr, d.group(3))

    rest = _DIVISOR.sub(constexpr, rest)
    if not used:
        return body, []
    ordered = [p for p in params if p in used]
    extra = ", ".join(f"KS{p[2:]} : tl.constexpr" for p in ordered)
    head = head[: -len("):")] + f", {extra}):"
    return head + rest, ordered


class KernelRewriter:
    """Turns Inductor kernel sources into plain `@triton.jit` functions (shared helper set)."""

    def __init__(self, interpreter_safe: bool) -> None:
        self.interpreter_safe = interpreter_safe
        self.helpers: dict[str, str] = {}  # emitted name -> source, in dependency order
        self.notes: list[str] = []
        self.libdevice_kept: set[str] = set()
        self.kernel_locals: dict[str, str] = {}  # helper defs found in kernel sources

    def rewrite(self, kernel: Kernel) -> str:
        body = _strip_inductor_scaffolding(kernel.inductor_source, kernel.name)
        # Kernel-local helpers (scan combine functions...) are numbered per kernel, so two
        # kernels can both define `_triton_helper_fn_add0`: rename a clashing one.
        for local in re.findall(r"^def (\w+)\(", body, re.M):
            if local == kernel.name:
                continue
            definition = re.search(rf"^def {local}\(.*?(?=^\S|\Z)", body, re.M | re.S).group(0)
            if self.kernel_locals.get(local, definition) != definition:
                renamed = f"{local}_{kernel.name}"
                body = re.sub(rf"(?<![\w.]){local}\b", renamed, body)
                local = renamed
            self.kernel_locals[local] = definition
        if self.interpreter_safe and "(idx_q < " in body:
            # Triton interpreter (3.9) bug: `block_mask & (0-d tensor < n)` gives int32 data
            # that tl.store rejects; a [1, 1] tensor broadcasts correctly.
            body = re.sub(
                r"\(idx_q < (\w+)\)", r"(tl.full([1, 1], 0, tl.int32) + idx_q < \1)", body
            )
        body = _sizes_not_specialized(body, kernel.name)
        body, kernel.divisors = _divisors_as_constexpr(body, kernel.name)
        return self._rewrite_calls(body, where=kernel.name).strip() + "\n"

    def _rewrite_calls(self, text: str, where: str) -> str:
        text = re.sub(
            r"(?<![\w.])triton_helpers\.(\w+)", lambda m: self._helper(m.group(1), where), text
        )
        text = re.sub(r"(?<![\w.])tl_math\.(\w+)", lambda m: self._tl_math(m.group(1)), text)
        text = re.sub(
            r"(?<![\w.])libdevice\.(\w+)", lambda m: self._libdevice(m.group(1), where), text
        )
        return text

    def _tl_math(self, name: str) -> str:
        import triton.language as tl

        return f"tl.{name}" if hasattr(tl, name) else f"tl.math.{name}"

    def _libdevice(self, name: str, where: str) -> str:
        if not self.interpreter_safe:
            self.libdevice_kept.add(name)
            return f"libdevice.{name}"
        if name in LIBDEVICE_AS_TL:
            return LIBDEVICE_AS_TL[name]
        if name in LIBDEVICE_AS_HELPER:
            helper = f"libdevice_{name}"
            if helper not in self.helpers:
                params, body = LIBDEVICE_AS_HELPER[name]
                self.helpers[helper] = f"@triton.jit\ndef {helper}({params}):\n    {body}\n"
                self.notes.append(
                    f"libdevice.{name} (no Triton-interpreter support) rewritten as {helper}, "
                    f"a tl expression; on a GPU, libdevice.{name} is the faster, exact choice"
                )
            return helper
        self.libdevice_kept.add(name)
        return f"libdevice.{name}"

    def _helper(self, name: str, where: str) -> str:
        """Copy torch._inductor.runtime.triton_helpers.<name> (and what it calls) into the file."""
        import triton.language as tl
        from torch._inductor.runtime import triton_helpers
        from triton.runtime.jit import JITFunction

        emitted = f"th_{name}"
        if emitted in self.helpers:
            return emitted
        if self.interpreter_safe and name in INTERPRETER_HELPERS:
            self.helpers[emitted] = "@triton.jit\n" + INTERPRETER_HELPERS[name]
            if name in ("max2", "min2"):
                self.notes.append(
                    f"triton_helpers.{name} (a tl.reduce the interpreter runs per element) "
                    f"replaced by tl.{name[:3]}, which does not propagate NaN"
                )
            return emitted
        obj = getattr(triton_helpers, name, None)
        if not isinstance(obj, JITFunction):
            raise DraftUnsupportedError(
                f"{where}: triton_helpers.{name} is not a plain Triton function; cannot inline it"
            )
        src = textwrap.dedent(obj.src)
        src = src[src.index("def ") :]
        # Other triton_helpers globals it uses: JIT functions (copied first) and constexprs.
        module_names = {
            n
            for n in re.findall(r"(?<![\w.])([A-Za-z_]\w*)", src)
            if n != name and hasattr(triton_helpers, n)
        }
        for dep in sorted(module_names):
            value = getattr(triton_helpers, dep)
            if isinstance(value, JITFunction):
                self._helper(dep, where)
                src = re.sub(rf"(?<![\w.]){dep}\b", f"th_{dep}", src)
            elif isinstance(value, tl.constexpr) and isinstance(value.value, (int, float, bool)):
                const = f"th_{dep.lstrip('_')}"
                self.helpers.setdefault(const, f"{const} = tl.constexpr({value.value!r})\n")
                src = re.sub(rf"(?<![\w.]){dep}\b", const, src)
        src = re.sub(rf"^def {name}\(", f"def {emitted}(", src)
        src = re.sub(r"(?<![\w.])math\.(\w+)", lambda m: self._tl_math(m.group(1)), src)
        src = self._rewrite_calls(src, where=f"triton_helpers.{name}")
        self.helpers[emitted] = "@triton.jit\n" + src.rstrip() + "\n"
        return emitted
