"""The judge reads a CPU output file the candidate wrote in its own job directory: through one
descriptor opened without following links (the candidate owns that directory), a regular file
of exactly the size the claimed shape needs."""

from __future__ import annotations

import os

import pytest
import torch

from tools.job.handover import HandoverError, _import_file


def test_reads_the_bytes_written(tmp_path):
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    (tmp_path / "out_0").write_bytes(t.numpy().tobytes())
    got = _import_file(str(tmp_path), "out_0", [3, 4], torch.float32, 12)
    assert torch.equal(got, t)


def test_a_link_is_refused_even_to_a_regular_file(tmp_path):
    secret = tmp_path / "judge_only.bin"
    secret.write_bytes(b"\0" * 48)
    os.symlink(secret, tmp_path / "out_0")
    with pytest.raises(HandoverError, match="not a regular file"):
        _import_file(str(tmp_path), "out_0", [3, 4], torch.float32, 12)


@pytest.mark.parametrize("name", ["../out_0", ".hidden", "a/b"])
def test_names_outside_the_directory_are_refused(tmp_path, name):
    with pytest.raises(HandoverError):
        _import_file(str(tmp_path), name, [1], torch.float32, 1)


def test_a_short_file_is_refused(tmp_path):
    (tmp_path / "out_0").write_bytes(b"\0" * 40)
    with pytest.raises(HandoverError, match="holds 40 bytes"):
        _import_file(str(tmp_path), "out_0", [3, 4], torch.float32, 12)
