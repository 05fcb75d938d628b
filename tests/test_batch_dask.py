"""The fleet path on a real ``LocalCluster`` (worker processes on 127.0.0.1)."""

from __future__ import annotations

import gzip
import json

import pytest

from batch_helpers import run_cli, seed_style_lines


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as local, Client(local) as client:
        yield local, client


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    text = "\n".join(seed_style_lines()) + "\n"
    (root / "node0").mkdir()
    (root / "node0" / "rank0.log").write_text(text * 60, encoding="utf-8")  # split into several blocks
    (root / "node1.log.gz").write_bytes(gzip.compress((text * 5).encode()))  # one partition
    return root, len(text.splitlines()) * 65


def test_partitioned_jsonl_keeps_every_line_and_its_number(cluster, fleet, kb_dir, index_dir, tmp_path):
    from service.batch.fleet import annotate_to_directory, engine_loads

    _, client = cluster
    root, total = fleet
    summary = annotate_to_directory(
        [str(root)], str(tmp_path / "out"), fmt="jsonl", client=client, blocksize=32 << 10,
        kb_dir=str(kb_dir), index_dir=str(index_dir), index_policy="refuse",
    )
    parts = sorted((tmp_path / "out").glob("part-*.jsonl"))
    assert len(parts) > 3
    records = [json.loads(line) for part in parts for line in part.read_text(encoding="utf-8").splitlines()]
    assert len(records) == total == summary.total_lines
    for name in {r["file"] for r in records}:
        numbers = [r["line_number"] for r in records if r["file"] == name]
        assert numbers == list(range(1, len(numbers) + 1))
    merged = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert merged["total_lines"] == total
    assert merged["entries"] and (tmp_path / "out" / "summary.txt").read_text().startswith("explainlog summary")
    loads = client.run(engine_loads)
    assert sorted(loads.values()) == [1, 1]  # each worker built its engine (and index) once


def test_parquet_and_the_dataframe_api(cluster, fleet, kb_dir, index_dir, tmp_path):
    import pandas as pd

    from service.batch.fleet import annotate_bag, annotate_dataframe, annotate_to_directory

    _, client = cluster
    root, total = fleet
    config = dict(kb_dir=str(kb_dir), index_dir=str(index_dir), index_policy="refuse")
    annotate_to_directory([str(root)], str(tmp_path / "pq"), fmt="parquet", client=client, blocksize=32 << 10, **config)
    frame = pd.concat(pd.read_parquet(p) for p in sorted((tmp_path / "pq").glob("part-*.parquet")))
    assert len(frame) == total
    assert set(frame[frame.known].pattern_id) >= {"nccl.init.affinity", "deepspeed.comm.cdb_none"}
    df = annotate_dataframe([str(root)], client=client, blocksize=32 << 10, **config)
    assert int(df.known.sum().compute()) == int(frame.known.sum())
    bag = annotate_bag([str(root)], client=client, blocksize=32 << 10, **config)
    assert bag.count().compute() == total


def test_cli_dask_flag(cluster, fleet, kb_dir, index_dir, tmp_path):
    local, _ = cluster
    root, total = fleet
    result = run_cli(kb_dir, index_dir, ["annotate", "--dask", local.scheduler_address, str(root),
                                         "-o", str(tmp_path / "cli"), "--format", "jsonl"])
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert f"{total:,} lines" in result.stdout.decode()
    assert sum(p.read_text().count("\n") for p in (tmp_path / "cli").glob("part-*.jsonl")) == total
