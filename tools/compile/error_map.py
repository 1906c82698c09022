"""Mapping exceptions to candidate-file lines: `map_exception(exc, candidate_path)` turns a
Triton compile error, a ptxas error, an interpreter error or an ordinary traceback into a
`SourceError` whose line is a line of the candidate file."""

from __future__ import annotations

import linecache
import os
import re
import traceback

from tools.core.results import SourceError

MAX_MESSAGE_LINES = 30


MAX_MESSAGE_CHARS = 2000


def map_exception(exc: BaseException, candidate_path: str | os.PathLike) -> SourceError:
    """A `SourceError` for `exc`, located at the deepest point in the candidate file.

    Handles Triton `CompilationError`s (whose positions are relative to the kernel function),
    `PTXASError`s, interpreter errors (the kernel body runs as rewritten Python whose frames carry
    candidate-file lines), syntax errors and ordinary tracebacks. The message keeps only frames in
    the candidate file and the final error, within ~30 lines / 2000 characters.
    """
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import PTXASError

    path = real_path(candidate_path)
    chain = exception_chain(exc)
    compile_errors = [e for e in chain if isinstance(e, CompilationError)]
    if compile_errors:
        return _map_compilation_error(compile_errors, chain, path)
    ptxas = next((e for e in chain if isinstance(e, PTXASError)), None)
    if ptxas is not None:
        return SourceError(kind="ptxas", message=_trim(_ptxas_message(ptxas)))
    return _map_traceback(exc, chain, path)


def exception_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it, outermost first (explicit causes, else unsuppressed context)."""
    chain: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in chain):
        chain.append(exc)
        if exc.__cause__ is not None:
            exc = exc.__cause__
        elif not exc.__suppress_context__:
            exc = exc.__context__
        else:
            break
    return chain


def _map_compilation_error(errors: list, chain: list[BaseException], path: str) -> SourceError:
    """Triton reports `lineno` relative to the kernel's source (which starts at `def`)."""
    located = []  # (error, file line, column), outermost first
    for err in errors:
        node = getattr(err, "node", None)
        def_line = _find_def_line(getattr(err, "src", None), path)
        if def_line is not None and getattr(node, "lineno", None) is not None:
            located.append((err, def_line + node.lineno - 1, getattr(node, "col_offset", 0)))
    innermost = errors[-1]
    text = innermost.error_message
    if not text:
        deeper = chain[chain.index(innermost) + 1 :]
        text = _final_line(deeper[0]) if deeper else str(innermost)
    kind = type(innermost).__name__
    if not located:
        return SourceError(kind=kind, message=_trim(f"{str(innermost)}"))

    err, line, col = located[-1]
    code = source_line(path, line)
    raw = linecache.getline(path, line).rstrip("\n")
    lines = [f"line {line}:", raw, " " * col + "^", text]
    for _, call_line, _ in reversed(located[:-1]):
        lines.append(
            f"(in a function called at line {call_line}: "
            f"{(source_line(path, call_line) or '').strip()})"
        )
    return SourceError(kind=kind, message=_trim("\n".join(lines)), line=line, code=code)


def _find_def_line(src: str | None, path: str) -> int | None:
    """1-based line in `path` where a function whose (dedented) source is `src` starts."""
    if not src or not path:
        return None
    wanted = [ln.strip() for ln in src.splitlines() if ln.strip()]
    if not wanted:
        return None
    file_lines = linecache.getlines(path)
    for i, line in enumerate(file_lines):
        if line.strip() != wanted[0]:
            continue
        body = [ln.strip() for ln in file_lines[i : i + 4 * len(wanted)] if ln.strip()]
        if body[: len(wanted)] == wanted:
            return i + 1
    return None


def _map_traceback(exc: BaseException, chain: list[BaseException], path: str) -> SourceError:
    from triton.runtime.errors import InterpreterError

    # The interpreter wraps what the kernel body raised: report the original.
    primary = exc
    while isinstance(primary, InterpreterError) and primary.__cause__ is not None:
        primary = primary.__cause__
    line: int | None = None
    frames: list[tuple[int, str, str]] = []  # (line, function, code) in the candidate file
    for err in chain:
        if err is not exc and err is not primary and not isinstance(err, InterpreterError):
            continue
        for fs in traceback.extract_tb(err.__traceback__):
            if fs.lineno is not None and real_path(fs.filename) == path:
                frame = (fs.lineno, fs.name, (fs.line or "").strip())
                if frame not in frames:
                    frames.append(frame)
    if (
        isinstance(primary, SyntaxError)
        and primary.filename
        and real_path(primary.filename) == path
    ):
        line = primary.lineno
    elif frames:
        line = frames[-1][0]

    body = ["Traceback (candidate file only):"] if frames else []
    for lineno, name, code in frames:
        body.append(f"  line {lineno}, in {name}")
        if code:
            body.append(f"    {code}")
    final = _final_line(primary)
    if primary is not exc:
        final += "\n(raised while the Triton interpreter ran the kernel)"
    message = _trim("\n".join(body + [final]))
    return SourceError(
        kind=type(primary).__name__, message=message, line=line, code=source_line(path, line)
    )


def _final_line(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _ptxas_message(exc: BaseException) -> str:
    """The ptxas diagnostics, without Triton's temp-file paths and repro command."""
    text = getattr(exc, "error_message", None) or str(exc)
    keep = ["ptxas rejected the PTX generated for this kernel:"]
    for line in text.splitlines():
        if (
            not line.strip()
            or line.startswith(("Repro command", "Internal Triton PTX codegen"))
            or line.strip() == "`ptxas` stderr:"
        ):
            continue
        keep.append(re.sub(r"^\S*ptxas\S*\s+/\S+\.ptx, line", "PTX line", line))
    return "\n".join(keep)


def _trim(text: str, max_lines: int = MAX_MESSAGE_LINES, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """Keep the end (where the error is): the last lines, then the last characters."""
    lines = text.rstrip().splitlines()
    if len(lines) > max_lines:
        lines = ["..."] + lines[-(max_lines - 1) :]
    text = "\n".join(lines)
    if len(text) > max_chars:
        text = "..." + text[-(max_chars - 3) :]
    return text


def source_line(path: str | None, line: int | None) -> str | None:
    if not path or not line:
        return None
    text = linecache.getline(str(path), line)
    return text.rstrip("\n") or None


def real_path(path: str | os.PathLike) -> str:
    return os.path.realpath(os.fspath(path)) if path else ""
