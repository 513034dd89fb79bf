"""brisk.sim and brisk.sweep from Python: a five-axis grid with five seeds
lands in the Parquet store, pandas reads the store directly, and a re-run
skips every finished run. The ip axis covers IPv4 and IPv6."""

import pathlib

import pandas as pd
import pytest

import brisk

BASE = """
name = "py-sweep"
duration = "300ms"
[link.down]
rate = "10Mbit"
delay = "10ms"
[link.up]
rate = "10Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 100
[[flows]]
name = "bulk"
kind = "brisk"
[[flows]]
name = "ping"
kind = "ping"
interval = "20ms"
"""

GRID = """
name = "py-five-axes"
seeds = 5
base = "base.toml"
[axes]
ip = ["v4", "v6"]
"link.down.rate" = ["4Mbit", "16Mbit"]
"link.down.delay" = ["5ms", "40ms"]
queue = [{ fifo = { limit_packets = 200 } }, { codel = {} }]
"flows[0].cc" = ["prague", "cubic"]
"""

AXES = ["ip", "link.down.rate", "link.down.delay", "queue", "flows[0].cc"]


def test_sim_returns_the_results_of_either_family():
    v4 = brisk.sim(BASE, seed=3)
    v6 = brisk.sim(BASE, seed=3, ip="v6")
    assert v4["seed"] == 3 and v4["ip"] == "v4" and v6["ip"] == "v6"
    assert [f["name"] for f in v4["flows"]] == ["bulk", "ping"]
    assert v6["flows"][0]["src"].startswith("[")
    # The same run twice is the same run.
    assert brisk.sim(BASE, seed=3) == v4
    assert v4["link"]["throughput_mbps"] > 5.0


def test_sim_reports_bad_scenarios():
    with pytest.raises(ValueError, match="rate"):
        brisk.sim(BASE.replace('"10Mbit"', '"fast"', 1))
    with pytest.raises(ValueError, match="ip is"):
        brisk.sim(BASE, ip="v5")


def test_five_axis_sweep_lands_in_the_store_and_reruns_skip(tmp_path: pathlib.Path):
    (tmp_path / "base.toml").write_text(BASE)
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    store = tmp_path / "store"

    first = brisk.sweep(grid, store=store)
    assert len(first) == 160
    assert (first.attrs["ran"], first.attrs["skipped"]) == (160, 0)
    for axis in AXES + ["seed", "run_key", "link.throughput_mbps", "queue.delay_ms.p99"]:
        assert axis in first.columns, axis
    assert first.groupby(AXES).size().eq(5).all()
    assert (first.groupby("ip").size() == 80).all()

    # pandas reads the store's directories as they are.
    runs = pd.read_parquet(store / "runs")
    flows = pd.read_parquet(store / "flows")
    assert len(runs) == 160 and len(flows) == 320
    assert set(runs["run_key"]) == set(first["run_key"])

    # The rate axis reaches the simulator.
    by_rate = first.groupby("link.down.rate")["link.throughput_mbps"].mean()
    assert by_rate["16Mbit"] > 2 * by_rate["4Mbit"]

    again = brisk.sweep(grid, store=store)
    assert (again.attrs["ran"], again.attrs["skipped"]) == (0, 160)
    pd.testing.assert_frame_equal(again, first)

    per_flow = brisk.sweep(grid, store=store, table="flows")
    assert len(per_flow) == 320
    assert set(per_flow["transport.cc"].dropna()) == {"prague", "cubic"}


def test_bad_grids_name_the_field_and_line(tmp_path: pathlib.Path):
    (tmp_path / "base.toml").write_text(BASE)
    grid = tmp_path / "grid.toml"
    grid.write_text('base = "base.toml"\n[axes]\nqueue = "codel"\n')
    with pytest.raises(ValueError, match=r"grid.toml:3: `axes.queue`: an axis is a list"):
        brisk.sweep(grid, store=tmp_path / "store")


def test_dask_engine_gives_the_local_rows(tmp_path: pathlib.Path):
    """The same grid on a local Dask cluster (two worker processes) and on
    local threads, each into its own store: identical rows; then a re-run
    on Dask skips every run."""
    from dask.distributed import Client, LocalCluster

    (tmp_path / "base.toml").write_text(BASE)
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID.replace("seeds = 5", "seeds = 2"))
    local = brisk.sweep(grid, store=tmp_path / "local")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        on_dask = brisk.sweep(grid, store=tmp_path / "dask", engine="dask", client=client)
        assert (on_dask.attrs["ran"], on_dask.attrs["skipped"]) == (64, 0)
        pd.testing.assert_frame_equal(on_dask, local)
        flows_local = brisk.sweep(grid, store=tmp_path / "local", table="flows")
        flows_dask = brisk.sweep(grid, store=tmp_path / "dask", table="flows",
                                 engine="dask", client=client)
        pd.testing.assert_frame_equal(flows_dask, flows_local)
        assert (flows_dask.attrs["ran"], flows_dask.attrs["skipped"]) == (0, 64)
    assert len(pd.read_parquet(tmp_path / "dask" / "runs")) == 64
