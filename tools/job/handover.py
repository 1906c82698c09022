"""Hand a candidate's outputs to the judge without copying them through the agent's process.

KernelBench outputs reach 6.4 GB: pickling them through a pipe (twice per trial) is what made
verifications of real sizes run out of memory and time. The candidate's job *exports* each
output where it lies; the judge's job *imports* it as a read-only view and compares it there.

- On a GPU: CUDA IPC. The candidate's job sends the handle of the allocation holding the
  output (`torch.multiprocessing`'s own sharing, the fields only, as plain data); the judge
  opens it on the same GPU. Nothing crosses the host.
- On the CPU: the candidate's job writes each output's bytes to a file in its own job directory;
  the judge maps the file (`torch.from_file`, private mapping: pages are read on demand).

Everything the candidate's job sends is untrusted. The judge checks the claimed shape and dtype
against the reference's, and only ever reads inside what it mapped: on a GPU the claimed offsets
and sizes are checked against the real extent of the IPC mapping (the driver's
`cuMemGetAddressRange`), so a forged handle can make the import fail, never read the judge's
own memory (where the reference outputs are).
"""

from __future__ import annotations

import ctypes
import os
import stat
from typing import Any

import torch

MAX_OUTPUTS = 64


class HandoverError(Exception):
    """The candidate's export cannot be read as it claims (forged, truncated or inconsistent)."""


# ------------------------------------------------------------------------------------------
# Candidate side


def export_outputs(outputs: list[Any], directory: str, tag: str) -> list[dict[str, Any]]:
    """One plain-data descriptor per output. Tensors stay where they are (GPU) or are written
    to `directory` (CPU); anything else is described by value (numbers) or type name, and so
    is a tensor that is not a plain dense one (sparse, nested, meta, a subclass): it has no
    single strided extent of bytes to hand over, and the judge reports it as a wrong output."""
    out = []
    for i, o in enumerate(outputs):
        if not isinstance(o, torch.Tensor):
            out.append(
                {"kind": "value", "value": o if _plain_scalar(o) else f"<{type(o).__name__}>"}
            )
            continue
        not_plain = _not_plain_tensor(o)
        if not_plain:
            out.append({"kind": "value", "value": f"<{not_plain}>"})
            continue
        t = o.detach()
        desc: dict[str, Any] = {
            "kind": "tensor",
            "shape": list(t.shape),
            "dtype": str(t.dtype).replace("torch.", ""),
            "stride": list(t.stride()),
            "device": t.device.type,
        }
        if t.device.type == "cuda":
            desc.update(_export_cuda(t))
        else:
            path = os.path.join(directory, f"{tag}_{i}.bin")
            c = t.contiguous()
            if c.numel():
                c.reshape(-1).view(torch.uint8).numpy().tofile(path)
            else:
                open(path, "wb").close()
            desc["file"] = os.path.basename(path)
        out.append(desc)
    return out


def _not_plain_tensor(t: torch.Tensor) -> str:
    """Why `t` cannot be exported as bytes and a shape ("" when it can): a sparse or other
    non-strided layout, a nested tensor, the meta device (no data), a tensor subclass."""
    if type(t) not in (torch.Tensor, torch.nn.Parameter):
        return f"a {type(t).__name__} tensor subclass, not a plain tensor"
    if t.layout != torch.strided:
        kind = "sparse" if t.is_sparse or "sparse" in str(t.layout) else "non-strided"
        return f"a {kind} tensor (layout {t.layout}), not a dense strided tensor"
    if t.is_nested:
        return "a nested tensor, not a dense strided tensor"
    if t.device.type == "meta":
        return "a meta tensor (no data), not a dense strided tensor"
    return ""


def _plain_scalar(o: Any) -> bool:
    return o is None or type(o) in (int, float, bool, str)


def _export_cuda(t: torch.Tensor) -> dict[str, Any]:
    if t.numel() == 0:
        return {"ipc": None}
    storage = t.untyped_storage()
    (
        device,
        handle,
        storage_size_bytes,
        storage_offset_bytes,
        ref_counter_handle,
        ref_counter_offset,
        event_handle,
        event_sync_required,
    ) = storage._share_cuda_()
    return {
        "ipc": {
            "device": int(device),
            "handle": bytes(handle),
            "storage_size_bytes": int(storage_size_bytes),
            "storage_offset_bytes": int(storage_offset_bytes),
            "ref_counter_handle": bytes(ref_counter_handle),
            "ref_counter_offset": int(ref_counter_offset),
            "event_handle": bytes(event_handle) if event_handle else None,
            "event_sync_required": bool(event_sync_required),
            "tensor_offset": int(t.storage_offset()),
        }
    }


# ------------------------------------------------------------------------------------------
# Judge side


def import_output(desc: Any, directory: str | None) -> Any:
    """The candidate's output `desc` (from `export_outputs`) as a tensor view, or its value.
    `directory`: the candidate's job directory (CPU files). Raises HandoverError."""
    if not isinstance(desc, dict) or desc.get("kind") not in ("tensor", "value"):
        raise HandoverError("an output descriptor is not one the harness writes")
    if desc["kind"] == "value":
        return desc.get("value")
    shape = _int_list(desc.get("shape"), "shape")
    stride = _int_list(desc.get("stride"), "stride")
    if len(stride) != len(shape) or any(s < 0 for s in shape + stride):
        raise HandoverError("inconsistent shape and stride")
    dtype = getattr(torch, str(desc.get("dtype")), None)
    if not isinstance(dtype, torch.dtype):
        raise HandoverError(f"unknown dtype {desc.get('dtype')!r}")
    numel = 1
    for s in shape:
        numel *= s
    if "file" in desc:
        if directory is None:
            raise HandoverError("a file export where none was expected")
        return _import_file(directory, desc["file"], shape, dtype, numel)
    if "ipc" in desc:
        return _import_cuda(desc["ipc"], shape, stride, dtype, numel)
    raise HandoverError("an output descriptor without data")


def _int_list(v: Any, what: str) -> list[int]:
    if not isinstance(v, (list, tuple)) or not all(type(x) is int for x in v) or len(v) > 16:
        raise HandoverError(f"malformed {what}")
    return list(v)


def _import_file(directory: str, name: Any, shape: list[int], dtype: torch.dtype, numel: int):
    if not isinstance(name, str) or os.path.basename(name) != name or name.startswith("."):
        raise HandoverError("an output file name outside the candidate's job directory")
    path = os.path.join(directory, name)
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    # One descriptor, opened without following a link (the candidate owns its directory and
    # could swap the file for a link to one only the judge may read between a check and the
    # open), checked and read through that same descriptor.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        raise HandoverError(f"output file {name} is missing or not a regular file") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise HandoverError(f"output file {name} is missing or not a regular file")
        if st.st_size != nbytes:
            raise HandoverError(
                f"output file {name} holds {st.st_size} bytes, its shape needs {nbytes}"
            )
        if numel == 0:
            return torch.empty(shape, dtype=dtype)
        raw = torch.empty(nbytes, dtype=torch.uint8)
        view = memoryview(raw.numpy())
        got = 0
        while got < nbytes:
            n = f.readinto(view[got:])
            if not n:
                raise HandoverError(f"output file {name} ended after {got} of {nbytes} bytes")
            got += n
    return raw.view(dtype).reshape(shape)


def _import_cuda(ipc: Any, shape: list[int], stride: list[int], dtype: torch.dtype, numel: int):
    if ipc is None:
        if numel:
            raise HandoverError("a non-empty output exported without memory")
        return torch.empty(shape, dtype=dtype, device="cuda")
    if not isinstance(ipc, dict):
        raise HandoverError("malformed IPC descriptor")
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    ints = (
        "device",
        "storage_size_bytes",
        "storage_offset_bytes",
        "ref_counter_offset",
        "tensor_offset",
    )
    if not all(type(ipc.get(k)) is int and ipc[k] >= 0 for k in ints):
        raise HandoverError("malformed IPC descriptor")
    if not all(isinstance(ipc.get(k), bytes) for k in ("handle", "ref_counter_handle")):
        raise HandoverError("malformed IPC descriptor")
    if ipc["device"] != 0:  # the job sees exactly one GPU
        raise HandoverError("an IPC handle of another device")
    item = torch.empty((), dtype=dtype).element_size()
    extent = (ipc["tensor_offset"] + sum((s - 1) * st for s, st in zip(shape, stride)) + 1) * item
    if numel and extent > ipc["storage_size_bytes"]:
        raise HandoverError("the output's view reaches past its storage")
    try:
        t = rebuild_cuda_tensor(
            torch.Tensor,
            torch.Size(shape),
            tuple(stride),
            ipc["tensor_offset"],
            torch.UntypedStorage,
            dtype,
            0,
            ipc["handle"],
            ipc["storage_size_bytes"],
            ipc["storage_offset_bytes"],
            False,
            ipc["ref_counter_handle"],
            ipc["ref_counter_offset"],
            ipc.get("event_handle"),
            bool(ipc.get("event_sync_required")),
        )
    except Exception as exc:  # noqa: BLE001 - a forged handle
        raise HandoverError(f"the output's IPC handle could not be opened: {exc}") from exc
    storage_ptr = t.untyped_storage().data_ptr()
    base, size = _address_range(storage_ptr - ipc["storage_offset_bytes"])
    if base != storage_ptr - ipc["storage_offset_bytes"] or (
        ipc["storage_offset_bytes"] + ipc["storage_size_bytes"] > size
    ):
        raise HandoverError("the output's claimed storage is larger than the shared allocation")
    return t


def _address_range(ptr: int) -> tuple[int, int]:
    """(base, size) of the device allocation containing `ptr` (CUDA driver API)."""
    lib = _libcuda()
    base, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
    fn = getattr(lib, "cuMemGetAddressRange_v2", None) or lib.cuMemGetAddressRange
    rc = fn(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    if rc != 0:
        raise HandoverError(f"cuMemGetAddressRange failed with CUDA error {rc}")
    return int(base.value), int(size.value)


_LIBCUDA: list[Any] = []


def _libcuda():
    if not _LIBCUDA:
        _LIBCUDA.append(ctypes.CDLL("libcuda.so.1"))
    return _LIBCUDA[0]
