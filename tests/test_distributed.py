"""Dask: counts and group-partitioned audits on a real LocalCluster with worker PROCESSES
give results identical to the single-machine path."""

import os

import dask.dataframe as dd
import distributed  # the 'dask' extra is part of the test install (.[all])
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fastpriv import Release, classic, skyline
from fastpriv.datasets import synthetic

POINTS = [(0, 0, 0, 0.9), (1, 1, 1, 0.7), (2, 2, 0, 0.5)]


def _sky(check):
    return check.to_dict()      # witness groups included: ties name the first group


def _same_classic(got, ref):
    assert set(got.models) == set(ref.models)
    for key, want in ref.models.items():
        assert (got.models[key]["value"], got.models[key]["worst_label"]) == \
            (want["value"], want["worst_label"]), key


@pytest.fixture(scope="module")
def reference(data):
    """Single-machine results, computed first: this also compiles every kernel the workers
    need into the on-disk cache, so the worker processes load them instead of compiling
    concurrently (the race `fastpriv warmup` exists for)."""
    from fastpriv.distributed import _audit_piece, _count_piece, _value_counts_piece

    t, folder = data
    rel = Release.from_table(t, sensitive="sensitive", group="group")
    piece = ("pandas", (t.slice(0, 400).to_pandas(), {}))
    _count_piece(*piece, ["group"], "sensitive", "error").to_release()
    _count_piece(*piece, ["group", "region"], "sensitive", "error").to_release()
    _value_counts_piece(*piece, ["group"], "sensitive", "error")
    _audit_piece(*piece, ["group"], "sensitive", "error",
                 {"l": 2, "values": rel.values, "q": [1 / rel.n_values] * rel.n_values,
                  "order": None, "skylines": {"*": POINTS}, "classic": True})
    return {"rel": rel, "classic": classic.audit(rel),
            "skyline": skyline.check(rel, skylines={"*": POINTS})}


@pytest.fixture(scope="module")
def cluster(reference):
    """Two worker processes with one thread each; always shut down."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as lc, \
            distributed.Client(lc) as client:
        yield client


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    t = synthetic(12_000, group_size=40, n_values=7, distribution="zipf", seed=11)
    t = t.append_column("region", pa.array([f"r{i % 3}" for i in range(t.num_rows)]))
    folder = tmp_path_factory.mktemp("parquet")
    for i in range(4):   # files hold complete groups (3000 rows = 75 groups each)
        pq.write_table(t.slice(i * 3000, 3000), os.path.join(folder, f"part{i}.parquet"),
                       row_group_size=1000)
    return t, str(folder)


def test_counts_on_the_cluster_equal_single_machine(cluster, data, reference):
    from fastpriv.distributed import count_partitions, release_from_dask, value_counts

    t, folder = data
    assert len(cluster.scheduler_info()["workers"]) == 2
    ref = reference["rel"]
    # Parquet on disk: one task per row group (fewer files than 2 * split_every)
    assert release_from_dask(folder, sensitive="sensitive", group="group",
                             split_every=2).equals(ref)
    # any Dask collection, here with several QI-like key columns
    ddf = dd.from_pandas(t.to_pandas(), npartitions=5)
    ref2 = Release.from_table(t, sensitive="sensitive", qi=["group", "region"])
    acc = count_partitions(ddf, sensitive="sensitive", qi=["group", "region"], split_every=3)
    assert acc.to_release().equals(ref2)
    assert acc.rows_seen == t.num_rows
    # the release from the cluster runs any audit
    rel = release_from_dask(folder, sensitive="sensitive", group="group")
    assert classic.audit(rel).to_dict()["models"]["k_anonymity"]["value"] == 40
    counts = value_counts(folder, sensitive="sensitive", group="group")
    assert [counts[v] for v in ref.values] == ref.value_totals.tolist()


def test_groupwise_audit_on_the_cluster_equals_single_machine(cluster, data, reference):
    from fastpriv.distributed import groupwise_audit

    t, folder = data
    rel = reference["rel"]
    res = groupwise_audit(folder, sensitive="sensitive", group="group",
                          skylines={"*": POINTS}, split_every=2)
    _same_classic(res.classic, reference["classic"])
    assert _sky(res.skyline) == _sky(reference["skyline"])
    assert (res.n_groups, res.n_rows, res.passes) == (rel.n_groups, rel.n_rows, 2)
    # a Dask DataFrame whose partitions split groups: shuffled on the keys first
    ddf = dd.from_pandas(t.to_pandas(), npartitions=3)
    res2 = groupwise_audit(ddf, sensitive="sensitive", group="group",
                           skylines={"*": POINTS}, partition_by_group=True)
    _same_classic(res2.classic, reference["classic"])
    assert _sky(res2.skyline) == _sky(reference["skyline"])


def test_distributed_argument_errors():
    from fastpriv.distributed import count_partitions, groupwise_audit

    with pytest.raises(TypeError, match="dask DataFrame or a path"):
        count_partitions([1, 2], sensitive="s", group="g")
    with pytest.raises(ValueError, match="exactly one of group= or qi="):
        count_partitions("x", sensitive="s")
    with pytest.raises(ValueError, match="no such file"):
        count_partitions("/nonexistent/dir", sensitive="s", group="g")
    with pytest.raises(ValueError, match="split_every must be >= 2"):
        count_partitions("x", sensitive="s", group="g", split_every=1)
    with pytest.raises(TypeError, match="partition_by_group=True needs a dask DataFrame"):
        groupwise_audit("x", sensitive="s", group="g", q=None, partition_by_group=True)
