"""What reaches the Spark driver per action stays bounded (issue 49).

``spark.release(method="partitions", merge="cluster")`` at 1M groups failed with
``TaskResultLost`` on Spark's default driver: the cluster's ``GROUP BY`` of the partition
states (one row per pair) was collected whole (``toArrow``). The same mechanism at a small
scale: a session of its own (a subprocess: ``spark.driver.maxResultSize`` is fixed when the
JVM starts) with the limit at its 1 MiB minimum, 60,000 groups (about 1.6 MiB of results)
and :data:`fastpriv.spark.PAIRS_PER_COLLECT` lowered to 10,000. ``counts`` (documented to
collect whole) goes past the limit, which shows that it bites; ``release`` with every
method and merge brings the pairs in blocks under it and equals the in-memory release.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

_SCRIPT = textwrap.dedent('''
    import json, os, sys
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import pyarrow as pa
    import pyarrow.compute as pc

    import fastpriv.spark as fs
    from fastpriv import Release

    spark = (SparkSession.builder.master("local[1]").appName("fastpriv-result-size")
             .config("spark.driver.maxResultSize", "1m")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    spark.sparkContext.setLogLevel("FATAL")
    n = 60_000
    df = spark.range(n).select(
        F.concat(F.lit("a-rather-long-group-label-"), F.col("id").cast("string")).alias("g"),
        (F.col("id") % 3).cast("string").alias("s")).repartition(2)
    ids = pa.array(range(n), pa.int64())
    ref = Release.from_table(pa.table({   # the same rows, built here (collecting them
        "g": pc.binary_join_element_wise(  # would itself pass the limit)
            "a-rather-long-group-label-", pc.cast(ids, pa.string()), ""),
        "s": pc.cast(pc.remainder(ids, 3), pa.string())}), group="g", sensitive="s")
    fs.PAIRS_PER_COLLECT = 10_000
    out = {}
    try:
        fs.counts(df, group="g", sensitive="s", method="partitions", merge="cluster")
        out["whole"] = "ok"
    except Exception as exc:
        out["whole"] = "maxResultSize" if "maxResultSize" in str(exc) else repr(exc)[:500]
    for method, merge in (("partitions", "cluster"), ("partitions", "driver"),
                          ("groupby", "driver")):
        try:
            rel = fs.release(df, group="g", sensitive="s", method=method, merge=merge)
            out[method + "/" + merge] = bool(rel.equals(ref))
        except Exception as exc:
            out[method + "/" + merge] = repr(exc)[:500]
    print("RESULT " + json.dumps(out))
''')


def test_release_stays_under_driver_max_result_size(tmp_path):
    from tests.spark_session import INSTALL

    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.fail(f"no 'java' on PATH and no JAVA_HOME: {INSTALL}")
    script = tmp_path / "result_size.py"
    script.write_text(_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=600, cwd=os.path.dirname(os.path.dirname(__file__)))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (proc.returncode, proc.stdout[-2000:],
                                            proc.stderr[-4000:])
    got = json.loads(lines[-1][len("RESULT "):])
    assert got == {"whole": "maxResultSize", "partitions/cluster": True,
                   "partitions/driver": True, "groupby/driver": True}
