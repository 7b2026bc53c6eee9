"""The Milvus connections of LiveVectorLake's hot tier (:mod:`.hot_milvus`) in this process, and the lifetime of
the Milvus Lite servers behind them.

One ``MilvusClient`` per server and token, shared by the tier objects using it (a lake makes a new tier object
on every recovery). For a local lake pymilvus starts a milvus-lite server thread on the folder (a URI ending in
``.db``); it holds the folder's lock, and on stop it flushes its memtable INTO the folder, so it must stop before
the folder is removed, never after (it would re-create it): :func:`discard`, :func:`remove_lake`.

A tier's finalizer only counts its connection down (:func:`drop`): it may run inside the garbage collector, at
any allocation, even while pymilvus or milvus-lite hold one of their own locks, so closing there could deadlock.
Connections nobody uses are closed by :func:`reap`, from ordinary code: the next connect, a tier's ``close()``,
:func:`discard`; whatever is left, milvus-lite's own ``atexit`` hook stops.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from smartvector_bench.core.errors import BenchError

OWNED = "milvus-collections.json"  # in hot/: the collections a lake created (hot_milvus writes it)


@dataclass(eq=False)
class Conn:
    client: object
    local: str | None  # the milvus-lite folder this process serves, or None for a server
    users: int = 0


_LOCK = threading.Lock()
_CONNS: dict[tuple[str, str], Conn] = {}


def acquire(target: str, token: str, local: bool) -> Conn:
    """The shared connection to ``target`` (a server URI, or a local ``.db`` folder with ``local``), counted up."""
    with _LOCK:
        conn = _CONNS.get((target, token))
        if conn is None:
            from pymilvus import MilvusClient  # here: a lake on the FAISS tier never imports pymilvus
            from pymilvus.exceptions import MilvusException

            try:
                client = MilvusClient(uri=target, token=token)
            except MilvusException as exc:
                hint = " (milvus-lite locks its folder: is another process using this lake?)" if local else ""
                raise BenchError(f"hot tier: cannot connect to Milvus at {shown(target)}: {exc.message}{hint}") \
                    from None
            conn = _CONNS[(target, token)] = Conn(client, target if local else None)
        conn.users += 1  # reused even when its last user is gone but not yet reaped: no server restart
    reap()
    return conn


def drop(conn: Conn) -> None:
    """A tier's finalizer: count down, nothing else (see the module docstring)."""
    conn.users -= 1


def reap(force_under: str | None = None) -> None:
    """Close the connections no tier uses (and, with ``force_under``, the local ones under that folder)."""
    with _LOCK:
        gone = [k for k, c in _CONNS.items() if c.users <= 0 or (
            force_under and c.local and (c.local == force_under or c.local.startswith(force_under + os.sep)))]
        conns = [_CONNS.pop(k) for k in gone]
    for conn in conns:
        try:
            conn.client.close()
        except Exception:  # noqa: BLE001, S110 - closing must not keep the server alive
            pass
        if conn.local is not None:
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(conn.local)  # stops its threads, flushes into the folder


def discard(lake_dir: str | Path, uri: str | None = None, token: str | None = None) -> None:
    """Before a lake folder is removed: stop the milvus-lite servers of this process under it and, with
    ``uri``, drop the lake's collections on that server (those listed in ``hot/milvus-collections.json``)."""
    root = os.path.realpath(lake_dir)
    reap(force_under=root)
    names = owned(Path(root) / "hot")
    if uri is None or not names:
        return
    try:
        conn = acquire(uri, token or "", False)
    except BenchError:
        return  # an unreachable server keeps them; nothing else can be done from here
    try:
        for name in names:
            conn.client.drop_collection(name)
    except Exception:  # noqa: BLE001, S110 - best effort on the way out
        pass
    finally:
        drop(conn)
        reap()


def remove_lake(path: str, uri: str | None = None, token: str | None = None) -> None:
    """A temporary lake's finalizer: :func:`discard`, then the folder."""
    try:
        discard(path, uri, token)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def owned(directory: Path) -> list[str]:
    """The collections listed in ``directory/milvus-collections.json`` ([] when missing or unreadable)."""
    try:
        names = json.loads((directory / OWNED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def shown(uri: str) -> str:
    """A URI without credentials (for messages and describe())."""
    p = urlparse(uri)
    if p.scheme in ("http", "https", "tcp") and p.hostname:
        return f"{p.scheme}://{p.hostname}" + (f":{p.port}" if p.port else "")
    return uri
