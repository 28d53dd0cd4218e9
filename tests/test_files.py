"""`maxatar.files`, the one set of rules by which every command reads and writes its files: JSON read strictly
(with the file named in every refusal), written as JSON (null for a float that is not finite), each file
replaced whole (a full disk leaves the previous one), nothing read from or written over a FIFO, and nothing
written into the installed packages."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path

import pytest

from maxatar import files

# A damaged file's content -> what the refusal says after the file's name.
DAMAGED = {
    b"[" * 100_000: ": cannot read it as JSON: its arrays or objects are nested too deeply",
    b"9" * 5000: ": cannot read it as JSON: an integer of 5,000 digits (at most 4,300 are read)",
    b'{"lr": 0.1, "lr": 0.2}': ": cannot read it as JSON: the key 'lr' appears twice in one object",
    b'{"a": {"b": 1, "b": 1}}': ": cannot read it as JSON: the key 'b' appears twice",
    b"\xff\xfe": ": cannot read it as JSON: it is not UTF-8 text",
    b'{"lr": }': ": cannot read it as JSON: Expecting value",
}


@pytest.mark.parametrize("content", DAMAGED, ids=lambda c: c[:12].decode(errors="replace"))
def test_damaged_json_is_one_value_error_naming_the_file(tmp_path, content):
    path = tmp_path / "damaged.json"
    path.write_bytes(content)
    with pytest.raises(ValueError) as error:
        files.read_json(path)
    assert str(error.value).startswith(f"{path}{DAMAGED[content]}")
    assert "\n" not in str(error.value)


def test_json_is_read_as_written_and_nan_is_never_written(tmp_path):
    data = {"mean": float("nan"), "rows": [1.5, float("inf"), -float("inf"), 2], "name": "x", "n": 10**30}
    files.write_json(tmp_path / "out.json", data)
    read = json.loads((tmp_path / "out.json").read_text(), parse_constant=lambda name: pytest.fail(f"{name} written"))
    assert read == files.read_json(tmp_path / "out.json") == {**data, "mean": None, "rows": [1.5, None, None, 2]}
    (tmp_path / "old.json").write_text('{"recent_return": NaN}')  # as Python's JSON writes it: earlier checkpoints
    assert math.isnan(files.read_json(tmp_path / "old.json")["recent_return"])


def test_a_fifo_is_neither_read_nor_written_over(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        files.read_json(fifo)  # a plain open would wait for a writer
    with pytest.raises(ValueError, match=f"--out '{fifo}' is not a regular file"):
        files.check_out_file(fifo)
    with pytest.raises(ValueError, match="is a directory"):
        files.check_out_file(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        files.check_out_file(tmp_path / "missing" / "x.gif")
    package = Path(files.__file__).parent / "x.gif"
    with pytest.raises(ValueError, match="inside the installed package"):
        files.check_out_file(package, "--out")
    assert files.check_out_file(tmp_path / "x.gif") == tmp_path / "x.gif"


def test_a_full_disk_leaves_the_previous_file_and_no_part_of_a_new_one(tmp_path, full_disk):
    (tmp_path / "summary.json").write_text('{"before": 1}')
    with pytest.raises(OSError) as error:
        files.write_json(tmp_path / "summary.json", {"after": 2})
    assert error.value.errno == errno.ENOSPC
    assert files.read_json(tmp_path / "summary.json") == {"before": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
    (tmp_path / "evaluation.md").write_text("before")
    with pytest.raises(OSError):  # files written together: none replaced, whichever write fails
        files.write_together({tmp_path / "summary.json": b"{}", tmp_path / "evaluation.md": b"after"})
    assert (tmp_path / "evaluation.md").read_text() == "before" and files.read_json(tmp_path / "summary.json") == {
        "before": 1
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evaluation.md", "summary.json"]
