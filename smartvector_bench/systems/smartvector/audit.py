"""Audit: a vector's lineage as one JSON record, and why a query's top hit won.

Both are read off the store's event log and columnar state; nothing here changes state.
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.signals.fusion import SIGNALS
from smartvector_bench.systems.smartvector.store import VectorStore
from smartvector_bench.core.timeutil import format_iso, from_days


def _iso(days: float) -> str | None:
    return None if not np.isfinite(days) else format_iso(from_days(days))


def _chain(store: VectorStore, i: int, forward: bool) -> list[dict]:
    c = store.corpus
    links = store.superseded_by if forward else c.supersedes
    out, j = [], int(links[i])
    while j >= 0:
        out.append({"id": c.ids[j], "version": int(c.version[j]), "valid_from": _iso(c.valid_from[j])})
        j = int(links[j])
    return out


def lineage(store: VectorStore, i: int, agent=None) -> dict:
    """Everything that happened to vector ``i``: supersession chain, status changes, ripples received,
    feedback, validations, accesses and contradictions, each with its simulated time and cause; with the
    consolidation ``agent``, also its dependency edges as they count after the agent's last run."""
    c = store.corpus
    mine = [e for e in store.events if e["vector"] == i]
    ids = c.ids

    def when(e: dict) -> str | None:
        return _iso(e["time"])

    contradictions = [{"time": when(e), "role": "loser", "other": ids[e["cause"]], "detector": e.get("detector"),
                       "applied": e.get("applied")} for e in mine if e["kind"] == "contradiction"]
    contradictions += [{"time": _iso(e["time"]), "role": "winner", "other": ids[e["vector"]],
                        "detector": e.get("detector"), "applied": e.get("applied")}
                       for e in store.events if e["kind"] == "contradiction" and e["cause"] == i]
    ledger = [p for p in store.penalties if p["vector"] == i]
    return {
        "id": ids[i], "doc_id": str(c.doc_id[i]), "version": int(c.version[i]), "source": str(c.source[i]),
        "authority": float(c.authority[i]), "created_at": _iso(c.created_at[i]),
        "valid_from": _iso(c.valid_from[i]), "valid_to": _iso(c.valid_to[i]),
        "supersedes": _chain(store, i, forward=False),
        "superseded_by": _chain(store, i, forward=True),
        "depends_on": [ids[j] for j in c.depends_on.row(i)],
        **({"edges_now": _edges_now(agent, i)} if agent is not None else {}),
        "status_history": [{"time": when(e), "from": e["old"], "to": e["new"], "cause": e["cause"]}
                           for e in mine if e["kind"] == "status"],
        "ripples_received": [{"time": _iso(p["time"]), "origin": ids[p["origin"]], "depth": p["depth"],
                              "applied": round(p["applied"], 6), "lifted_at": _iso(p["lifted_at"])
                              if p["lifted_at"] is not None else None} for p in ledger],
        "feedback": [{"time": when(e), "accepted": e["accepted"], "cause": e["cause"],
                      "confidence_before": e["confidence_before"], "confidence_after": e["confidence_after"]}
                     for e in mine if e["kind"] == "feedback"],
        "validations": [{"time": when(e), "cause": e["cause"]} for e in mine if e["kind"] == "validation"],
        "accesses": int(store.access[i]),
        "contradictions": sorted(contradictions, key=lambda x: x["time"] or ""),
        "state": {"status": None if store.status[i] < 0 else Status(int(store.status[i])).name,
                  "base_confidence": round(float(store.base_confidence[i]), 6),
                  "positive": int(store.positive[i]), "negative": int(store.negative[i]),
                  "last_validated": _iso(store.last_validated[i]),
                  "deprecated_at": _iso(store.deprecated_at[i]), "archived_at": _iso(store.archived_at[i])},
    }


def _edges_now(agent, i: int) -> dict:
    from smartvector_bench.systems.smartvector.consolidation import reverse

    at = agent.last_run if agent.last_run is not None else -np.inf
    deps = agent.depends_on(at)
    ids = agent.corpus.ids
    return {"depends_on": [ids[j] for j in deps.row(i)], "depended_by": [ids[j] for j in reverse(deps).row(i)]}


def explain(retriever, query_vector: np.ndarray, as_of: float, runner_ups: int = 1,
            asked_at: float | None = None) -> dict:
    """Why the top hit won for one query: its four signals, weighted contributions and status at ``as_of``,
    the same for the runner-up(s), and the logged events that changed the top hit's confidence up to
    ``asked_at`` (when the question was asked; default ``as_of``). The state scored is the store's state
    when ``explain`` is called, so call it when the query is answered. ``retriever`` serves from a live store
    (:class:`~.retrievers.base.LiveStore`: SmartVector)."""
    from smartvector_bench.core.errors import BenchError
    from smartvector_bench.systems.base import LiveStore

    if not isinstance(retriever, LiveStore):
        raise BenchError(f"explain: {type(retriever).__qualname__} keeps no store with an event log (the LiveStore "
                         "protocol: bind_live, live_state, query_signals)")
    asked_at = as_of if asked_at is None else asked_at
    score, key, sig, w = retriever.query_signals(query_vector, as_of)
    order = np.lexsort((np.arange(key.shape[1]), -key[0]))
    order = [int(j) for j in order if np.isfinite(key[0, j])][: 1 + runner_ups]
    total = w.total()
    store: VectorStore = retriever.live_state()[0]
    ids = store.corpus.ids

    def describe(j: int) -> dict:
        values = {name: float(np.clip(sig[name][0, j], 0, 1) if name == "semantic" else sig[name][0, j])
                  for name in SIGNALS}
        status = ("DEPRECATED" if sig["deprecated"][0, j] else "ARCHIVED" if sig["archived"][0, j]
                  else "DORMANT" if sig["dormant"][0, j] else "ACTIVE")
        return {"id": ids[j], "score": round(float(score[0, j]), 6), "status_at_as_of": status,
                "signals": {k: round(v, 6) for k, v in values.items()},
                "contributions": {k: round(getattr(w, k) * v / total, 6) for k, v in values.items()}}

    if not order:
        return {"as_of": _iso(as_of), "top": None, "runner_ups": [], "changed_by": []}
    top = order[0]
    changed = [{"time": _iso(e["time"]), "kind": e["kind"], "cause": ids[e["cause"]] if isinstance(e["cause"], int)
                else e["cause"], "confidence_before": e.get("confidence_before"),
                "confidence_after": e.get("confidence_after")}
               for e in store.events if e["vector"] == top and e["time"] <= asked_at
               and e["kind"] in ("feedback", "ripple", "validation", "access", "contradiction")]
    return {"as_of": _iso(as_of), "asked_at": _iso(asked_at), "top": describe(top),
            "runner_ups": [describe(j) for j in order[1:]],
            "changed_by": changed}


def detection_quality(store: VectorStore, agent, rumor: Ragged) -> dict:
    """How the consolidation verdicts line up with the injected rumors (the dataset's truth, which the agent
    never sees): share of rumors that lost at least one verdict, and share of verdict losers that are rumors."""
    rumors = set(np.unique(rumor.indices).tolist())
    losers = [loser for _, loser, _ in agent.contradictions]
    demoted = set(losers)
    ingested = {r for r in rumors if store.status[r] >= 0}
    return {"rumors_ingested": len(ingested), "verdicts": len(losers),
            "rumors_demoted": len(demoted & ingested),
            "rumor_recall": round(len(demoted & ingested) / len(ingested), 6) if ingested else None,
            "loser_precision": round(sum(x in rumors for x in losers) / len(losers), 6) if losers else None}
