"""The clients benchmark's bookkeeping (benchmarks/clients.py): a client that measures nothing (its
dependency missing) keeps the results an earlier run committed instead of replacing them with an empty table,
and its table says so.
The measurements themselves are benchmarks, never run as tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks import clients

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

COMMITTED = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "clients"


def test_a_client_skipped_for_a_missing_checkout_keeps_its_earlier_results(tmp_path, monkeypatch):
    out = tmp_path / "clients"
    shutil.copytree(COMMITTED, out)
    before_csv = (out / "cleanrl_dqn_jax.csv").read_text()
    before_meta = json.loads((out / "meta.json").read_text())["clients"]["cleanrl_dqn_jax"]
    # torch.set_num_threads would change the whole test process; the thread count is not what is tested here
    monkeypatch.setattr(clients, "set_torch_threads", lambda count: "torch threads untouched")

    clients.main(["--only", "cleanrl_dqn_jax", "--out", str(out)])  # no --cleanrl: skipped, nothing measured

    assert (out / "cleanrl_dqn_jax.csv").read_text() == before_csv
    after_meta = json.loads((out / "meta.json").read_text())["clients"]["cleanrl_dqn_jax"]
    skipped = after_meta.pop("skipped_since")
    assert after_meta == before_meta  # the measurement's own record is untouched
    assert skipped["command"] == f"python -m benchmarks.clients --only cleanrl_dqn_jax --out {out}"
    assert skipped["notes"] == [next(n for n in skipped["notes"] if "no CleanRL checkout" in n)]
    results = (out / "results.md").read_text()
    assert "## cleanrl_dqn_jax" in results and "dqn_jax.py 20000 steps" in results
    # The table still says that the latest attempt measured nothing, and why.
    assert f"A later run (`{skipped['command']}`, started {skipped['started']}) measured nothing" in results
    assert "no CleanRL checkout" in results
