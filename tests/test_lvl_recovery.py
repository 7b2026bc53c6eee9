"""LiveVectorLake's crash recovery between the tiers: a writer cut off after the cold commit (injected, and a
SIGKILLed subprocess), one exiting before the hot state, an unreadable hot state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from smartvector_bench.systems.livevectorlake import LiveVectorLake

from .lvl_cases import DIM, EMB, _history, ingest


# ---- crash between the tiers ---------------------------------------------------------------------------------

def _consistent_answers(lake):
    q = EMB.encode(["A two changed"])[0]
    hot = sorted((h.doc_id, h.position, h.chunk_id) for h in lake.query(q, None, k=10, tier="hot").hits)
    cold = sorted((h.doc_id, h.position, h.chunk_id) for h in lake.query(q, None, k=10, tier="cold").hits)
    return hot == cold and len(hot) == len(lake.hot)


@pytest.mark.parametrize("stage", ["after_cold_commit", "before_hot_state"])
def test_injected_crash_between_tiers_is_recovered(tmp_path, stage):
    path = tmp_path / "l"
    lake = LiveVectorLake.open(path, dim=DIM)
    ingest(lake, "a", 1, ["A one.", "A two."], 1.0)

    def hook(at, seq):
        if at == stage and seq == 2:
            raise RuntimeError("writer died")

    lake.fault_hook = hook
    with pytest.raises(RuntimeError, match="writer died"):
        ingest(lake, "a", 2, ["A one.", "A two, changed."], 2.0)
    assert LiveVectorLake.status(path) == {"cold_seq": 2, "hot_seq": 1}  # cold committed, hot behind
    lake.fault_hook = None

    reopened = LiveVectorLake.open(path)
    rec = reopened.recoveries[-1]
    assert rec["rebuilt"] and rec["hot_seq_before"] == 1 and rec["cold_seq"] == 2
    assert reopened.check()["consistent"] and _consistent_answers(reopened)
    assert "A two, changed." in [h.text for h in reopened.query(EMB.encode(["A two changed"])[0]).hits]
    # the writer that failed recovers by itself on its next call
    assert lake.query(EMB.encode(["A one"])[0]).tier == "hot" and lake.check()["consistent"]
    # re-sending the version that was cut off is a no-op: it is already in the cold tier
    again, _ = ingest(reopened, "a", 2, ["A one.", "A two, changed."], 2.5)
    assert again.seq is None and again.classes["unchanged"] == 2


def test_unreadable_hot_state_is_rebuilt_from_the_cold_tier(tmp_path):
    path = tmp_path / "l"
    lake = LiveVectorLake.open(path, dim=DIM)
    _history(lake)
    (path / "hot" / "state.json").write_text("{not json", encoding="utf-8")
    reopened = LiveVectorLake.open(path)
    assert reopened.recoveries[-1]["rebuilt"] and reopened.check()["consistent"]
    assert len(reopened.hot) == 3 and reopened.seq == 5  # nothing lost: the cold tier is the truth


CHILD = r"""
import sys
from smartvector_bench.core.embedding import HashingEmbedder
from smartvector_bench.systems.livevectorlake import LiveVectorLake
emb = HashingEmbedder(64)
lake = LiveVectorLake.open(sys.argv[1], dim=64)
versions = [["A one.", "A two."], ["A one.", "A two, changed."], ["A one.", "A two, changed.", "A three."]]
for v, paras in enumerate(versions, 1):
    lake.ingest_document("a", v, "\n\n".join(paras), float(v), emb.encode)
print("DONE", flush=True)
"""


def _run_child(path, fault: str) -> tuple[int, list[str]]:
    env = dict(os.environ, SMARTVECTOR_LVL_FAULT=fault, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("LVL_FAULT_PAUSED"):
                os.kill(proc.pid, signal.SIGKILL)  # a real kill -9 between the two tier writes
                break
        rc = proc.wait()
    finally:
        watchdog.cancel()
        proc.stdout.close()
    return rc, lines


def test_writer_killed_between_tiers_recovers_on_open(tmp_path):
    path = tmp_path / "l"
    rc, lines = _run_child(path, "after_cold_commit:3:pause")
    assert rc == -signal.SIGKILL and lines == ["LVL_FAULT_PAUSED stage=after_cold_commit seq=3"]
    assert LiveVectorLake.status(path) == {"cold_seq": 3, "hot_seq": 2}
    lake = LiveVectorLake.open(path)
    rec = lake.recoveries[-1]
    assert rec["rebuilt"] and "sequence 2" in rec["reason"] and rec["cold_seq"] == 3
    assert lake.check()["consistent"] and len(lake.hot) == 3
    hit = lake.query(EMB.encode(["A three"])[0], None, k=1)
    assert hit.tier == "hot" and hit.hits[0].text == "A three."
    assert lake.document_as_of("a", 2.5) == "A one.\n\nA two, changed."


def test_writer_exiting_before_the_hot_state_recovers_on_open(tmp_path):
    path = tmp_path / "l"
    rc, _ = _run_child(path, "before_hot_state:2:exit")
    assert rc == 75
    assert LiveVectorLake.status(path) == {"cold_seq": 2, "hot_seq": 1}
    lake = LiveVectorLake.open(path)
    assert lake.recoveries[-1]["rebuilt"] and lake.check()["consistent"] and len(lake.hot) == 2
