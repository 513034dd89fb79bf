"""Brisk's deterministic network simulator from Python.

``sim`` runs one scenario and returns its results as a dict (the shape
``brisk sim --json`` prints); ``sweep`` runs a grid of scenarios (axes over
scenario fields times seeds, see docs/SWEEPS.md) into a Parquet results
store, skipping runs the store already holds, and returns one tidy row per
run (or per flow) as a pandas DataFrame. A sweep runs on local threads, or
on a Dask cluster with ``engine="dask"``; the rows are the same either way.
"""

import json
import os

from . import _native

__all__ = ["sim", "sweep"]

ENGINES = ("local", "dask")


def sim(scenario, seed=None, ip=None):
    """Runs one scenario: a path to a TOML file, or TOML text.

    seed overrides the scenario's seed; ip ("v4" or "v6") its address family.
    Raises ValueError for a scenario that does not parse or validate.
    """
    return json.loads(_native.sim(os.fspath(scenario), seed, ip))


def sweep(grid, store=None, jobs=0, table="runs", engine="local", client=None):
    """Runs a grid (a path to a grid file, or grid TOML text).

    store is the results directory (default brisk-sweep-out/<grid name>);
    jobs the runs at once (0: one per core; with Dask, the workers of the
    local cluster started when no client is given); table "runs" or "flows";
    engine "local" (threads in this process) or "dask" (client, or the
    current Dask client, or a local cluster started for the call).
    The DataFrame's attrs say how many runs ran now and how many were
    skipped as already stored, and where the store is.
    """
    import pandas as pd

    if table not in ("runs", "flows"):
        raise ValueError(f"table is 'runs' or 'flows', not {table!r}")
    if engine not in ENGINES:
        raise ValueError(f"engine is one of {ENGINES}, not {engine!r}")
    grid = os.fspath(grid)
    store = None if store is None else os.fspath(store)
    if engine == "local":
        out = _native.sweep(grid, store, jobs)
    else:
        todo = json.loads(_native.plan(grid, store))
        results = _run_on_dask(todo, client, jobs) if todo else {}
        out = _native.finish(grid, results, store)
    out = json.loads(out)
    part = out[table]
    frame = pd.DataFrame(part["rows"], columns=part["columns"])
    frame.attrs.update(ran=out["ran"], skipped=out["skipped"], store=out["store"])
    return frame


def _run_point(point):
    """One planned run, on a Dask worker: (index, results JSON text)."""
    text = _native.run_point(point["scenario"], point["seed"], point["base_dir"])
    return point["index"], text


def _run_on_dask(todo, client, jobs):
    """Runs the planned points on Dask; point index to results JSON text."""
    from dask.distributed import Client, LocalCluster, get_client

    cluster = None
    if client is None:
        try:
            client = get_client()
        except ValueError:
            cluster = LocalCluster(
                n_workers=jobs or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            )
            client = Client(cluster)
    try:
        futures = client.map(_run_point, todo, pure=False)
        return dict(client.gather(futures))
    finally:
        if cluster is not None:
            client.close()
            cluster.close()
