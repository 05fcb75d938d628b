"""Annotate a fleet's logs on Dask: the same engine, one partition per block of a file.

    from dask.distributed import Client
    from service.batch.fleet import annotate_bag, annotate_dataframe, annotate_to_directory

    client = Client("tcp://scheduler:8786")
    bag = annotate_bag(["logs/"])                     # dask.bag of JSONL-contract records
    df = annotate_dataframe(["logs/*.log.gz"])        # dask.dataframe, one row per line
    summary = annotate_to_directory(["logs/"], "out/", fmt="parquet", client=client)

Partitions: a plain file is split into blocks of ``blocksize`` bytes at line boundaries (a
first pass counts each block's lines so every line keeps its real line number); a compressed
file cannot be split and is one partition. Each worker process builds its ``Explainer`` and
engine once (``_engine``) and reuses it for every partition it runs; the semantic index is
loaded once per worker, lazily, as in the CLI. ``annotate_to_directory`` has each partition
write its own ``part-FFFFF-BBBBB.jsonl`` / ``.parquet`` (so the output directory must be on a
filesystem the workers share), and merges the partitions' summaries into one
``summary.json`` + ``summary.txt``. Paths are resolved on the client and must be readable by
the workers under the same names.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson

from service.explainer import CONTRACT_KEYS
from service.batch.inputs import Source, discover
from service.batch.options import Options
from service.batch.problems import Problem
from service.batch.process import process_chunk, renderer
from service.batch.reader import CHUNK_BYTES, MAX_LINE_BYTES, LineChunker, SourceReader, detect_compression
from service.batch.summary import Summary, merge_all

DEFAULT_BLOCKSIZE = 64 << 20


@dataclass(frozen=True)
class Config:
    """Where the engine's knowledge lives; part of the cache key of a worker's engine."""

    kb_dir: str | None = None
    index_dir: str | None = None
    model_path: str | None = None
    index_policy: str = "rebuild"
    semantic: bool = True


@dataclass(frozen=True)
class Partition:
    source_index: int
    name: str
    path: str
    start: int
    end: int | None  # None: the whole (compressed) file
    block: int


_ENGINES: dict[Config, Any] = {}
_LOCK = threading.Lock()
ENGINE_LOADS = 0  # how many engines this process built: tests check it is one per worker


def _engine(config: Config):
    """This process's engine for ``config``, built on first use."""
    global ENGINE_LOADS
    with _LOCK:
        engine = _ENGINES.get(config)
        if engine is None:
            from service.batch.engine import Engine
            from service.explainer import Explainer

            explainer = Explainer(
                kb_dir=config.kb_dir, index_dir=config.index_dir, model_path=config.model_path,
                index_policy=config.index_policy,
            )
            engine = _ENGINES[config] = Engine(explainer, semantic=config.semantic)
            ENGINE_LOADS += 1
        return engine


def engine_loads() -> int:
    """For ``client.run``: the number of engines built in this worker process."""
    return ENGINE_LOADS


def plan_partitions(paths: list[str], blocksize: int = DEFAULT_BLOCKSIZE) -> tuple[list[Source], list[Partition], list[Problem]]:
    """Discover inputs and cut plain files at the first newline after each ``blocksize``."""
    sources, problems = discover(paths)
    sources = [s for s in sources if not s.is_stdin]
    partitions: list[Partition] = []
    for index, source in enumerate(sources):
        path = str(source.path)
        try:
            with open(path, "rb") as handle:
                head = handle.read(8)
                size = os.fstat(handle.fileno()).st_size
                if detect_compression(head) or size <= blocksize:
                    partitions.append(Partition(index, source.name, path, 0, None, 0))
                    continue
                cuts = [0]
                position = blocksize
                while position < size:
                    handle.seek(position)
                    while True:
                        piece = handle.read(1 << 16)
                        if not piece:
                            position = size
                            break
                        newline = piece.find(b"\n")
                        if newline != -1:
                            position = handle.tell() - len(piece) + newline + 1
                            break
                    if position < size:
                        cuts.append(position)
                    position += blocksize
                cuts.append(size)
                for block, (start, end) in enumerate(zip(cuts, cuts[1:])):
                    partitions.append(Partition(index, source.name, path, start, end, block))
        except OSError as exc:
            problems.append(Problem(source.name, 0, "unreadable", f"cannot read: {exc.strerror or exc}", True))
    return sources, partitions, problems


def _range_blocks(path: str, start: int, end: int) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        handle.seek(start)
        left = end - start
        while left > 0:
            block = handle.read(min(1 << 20, left))
            if not block:
                return
            left -= len(block)
            yield block


def count_lines(partition: Partition) -> int:
    """Lines in a byte-range partition, counted the way the chunker counts them."""
    count, last = 0, b"\n"
    for block in _range_blocks(partition.path, partition.start, partition.end or 0):
        count += block.count(b"\n")
        last = block[-1:]
    return count + (1 if last != b"\n" else 0)


def _chunks(partition: Partition, first_line: int, problems: list[Problem]) -> Iterator:
    if partition.end is None:
        source = Source(partition.name, Path(partition.path), None)
        yield from SourceReader(source, partition.source_index, problems).chunks()
        return
    chunker = LineChunker(partition.source_index, MAX_LINE_BYTES, CHUNK_BYTES)
    chunker.next_line = first_line
    for block in _range_blocks(partition.path, partition.start, partition.end):
        yield from chunker.feed(block)
    yield from chunker.finish()


def run_partition(partition: Partition, first_line: int, config: Config, options: Options) -> tuple[list[bytes], Summary]:
    """Annotate one partition: its JSONL payloads (in order) and its summary."""
    engine = _engine(config)
    problems: list[Problem] = []
    summary = Summary()
    summary.ensure_file(partition.source_index, partition.name)
    payloads: list[bytes] = []
    with _LOCK:  # one engine per process is not thread-safe; Dask may run tasks in threads
        render = renderer(options)
        for chunk in _chunks(partition, first_line, problems):
            result = process_chunk(engine, chunk, partition.name, options, render)
            payloads.append(result.payload)
            summary.merge(result.summary)
    summary.problems.extend(problems)
    return payloads, summary


BILINGUAL = ("title", "summary", "explanation", "action")  # {en, zh} keys: two columns each


def flat_record(record: dict) -> dict:
    """A contract record with nested values flattened to columns (for dataframes/Parquet)."""
    flat = {"file": record["file"], "line_number": record["line_number"]}
    for key in CONTRACT_KEYS:
        value = record.get(key)
        if key in BILINGUAL:
            flat[f"{key}_en"] = value["en"] if value else None
            flat[f"{key}_zh"] = value["zh"] if value else None
        elif key in ("fields", "context", "candidates", "verdicts"):
            empty: object = [] if key in ("candidates", "verdicts") else {}
            flat[key] = orjson.dumps(value if value is not None else empty).decode()
        elif key == "source":
            flat[key] = orjson.dumps(value).decode() if value is not None else None
        else:
            flat[key] = value
    return flat


def _records(payloads: list[bytes]) -> list[dict]:
    return [orjson.loads(line) for payload in payloads for line in payload.splitlines()]


def _frame(records: list[dict]):
    import pandas as pd

    frame = pd.DataFrame([flat_record(r) for r in records], columns=_COLUMNS)
    return frame.astype({c: _DTYPES.get(c, "str") for c in _COLUMNS})


_COLUMNS = ["file", "line_number"] + [
    c for key in CONTRACT_KEYS
    for c in ((f"{key}_en", f"{key}_zh") if key in BILINGUAL else (key,))
]


_DTYPES = {"line_number": "int64", "known": "bool", "confidence": "float64"}


def _plan_with_offsets(paths: list[str], blocksize: int, client: Any = None) -> tuple[list[Source], list[tuple[Partition, int]], list[Problem]]:
    import dask

    sources, partitions, problems = plan_partitions(paths, blocksize)
    ranged = [p for p in partitions if p.end is not None and _has_next(p, partitions)]  # the last block needs no count
    counts = {}
    if ranged:
        tasks = [dask.delayed(count_lines)(p) for p in ranged]
        values = client.compute(tasks, sync=True) if client is not None else dask.compute(*tasks)
        counts = dict(zip(ranged, values))
    planned: list[tuple[Partition, int]] = []
    next_line: dict[int, int] = {}
    for partition in partitions:
        first = next_line.get(partition.source_index, 1)
        planned.append((partition, first))
        if partition in counts:
            next_line[partition.source_index] = first + counts[partition]
    return sources, planned, problems


def _has_next(partition: Partition, partitions: list[Partition]) -> bool:
    return any(p.source_index == partition.source_index and p.block == partition.block + 1 for p in partitions)


def annotate_bag(paths: list[str], *, blocksize: int = DEFAULT_BLOCKSIZE, client: Any = None, **config: Any):
    """A ``dask.bag`` of contract records (plus ``file`` and ``line_number``), in input order."""
    import dask
    import dask.bag as db

    _, planned, _ = _plan_with_offsets(paths, blocksize, client)
    cfg, options = Config(**config), Options(format="jsonl", semantic=config.get("semantic", True))
    parts = [dask.delayed(lambda p, f: _records(run_partition(p, f, cfg, options)[0]))(p, f) for p, f in planned]
    return db.from_delayed(parts)


def annotate_dataframe(paths: list[str], *, blocksize: int = DEFAULT_BLOCKSIZE, client: Any = None, **config: Any):
    """A ``dask.dataframe`` with one row per line; nested values are JSON strings."""
    import dask
    import dask.dataframe as dd

    _, planned, _ = _plan_with_offsets(paths, blocksize, client)
    cfg, options = Config(**config), Options(format="jsonl", semantic=config.get("semantic", True))
    parts = [dask.delayed(lambda p, f: _frame(_records(run_partition(p, f, cfg, options)[0])))(p, f) for p, f in planned]
    return dd.from_delayed(parts, meta=_frame([]))


def _write_partition(partition: Partition, first_line: int, config: Config, options: Options, out_dir: str, fmt: str) -> dict:
    payloads, summary = run_partition(partition, first_line, config, options)
    stem = Path(out_dir) / f"part-{partition.source_index:05d}-{partition.block:05d}"
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        types = {"line_number": pa.int64(), "known": pa.bool_(), "confidence": pa.float64()}
        schema = pa.schema([(c, types.get(c, pa.string())) for c in _COLUMNS])  # same in every part
        table = pa.Table.from_pylist([flat_record(r) for r in _records(payloads)], schema=schema)
        pq.write_table(table, str(stem) + ".parquet")
    else:
        with open(str(stem) + ".jsonl", "wb") as handle:
            for payload in payloads:
                handle.write(payload)
    return summary.to_json()


def annotate_to_directory(
    paths: list[str], out_dir: str, *, fmt: str = "jsonl", client: Any = None,
    blocksize: int = DEFAULT_BLOCKSIZE, only_known: bool = False, min_severity: str | None = None, **config: Any,
) -> Summary:
    """Write partitioned JSONL or Parquet plus one merged summary into ``out_dir``."""
    import dask

    from service.batch.formats.summary import render_summary

    os.makedirs(out_dir, exist_ok=True)
    sources, planned, problems = _plan_with_offsets(paths, blocksize, client)
    cfg = Config(**config)
    options = Options(format="jsonl", only_known=only_known, min_severity=min_severity, semantic=cfg.semantic)
    tasks = [dask.delayed(_write_partition)(p, f, cfg, options, out_dir, fmt) for p, f in planned]
    results = client.compute(tasks, sync=True) if client is not None else dask.compute(*tasks)
    summary = Summary()
    for index, source in enumerate(sources):
        summary.ensure_file(index, source.name)
    summary = merge_all([summary] + [Summary.from_json(r) for r in results])
    summary.problems = problems + summary.problems
    with open(Path(out_dir) / "summary.json", "wb") as handle:
        handle.write(orjson.dumps(summary.to_json(), option=orjson.OPT_INDENT_2))
    with open(Path(out_dir) / "summary.txt", "w", encoding="utf-8") as handle:
        handle.write(render_summary(summary))
    return summary
