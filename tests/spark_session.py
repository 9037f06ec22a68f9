"""The local Spark session of the test suite: one builder for every test module that needs it.

``getOrCreate`` returns the session already running in this process, so the first module to
ask decides its master; every later caller reuses it. Fails (never skips) without PySpark
or a Java runtime: the README's test command installs both.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

INSTALL = ("the Spark tests need PySpark and a Java runtime: pip install -e '.[all]' and "
           "apt-get install -y openjdk-17-jre-headless (what .ci/run does)")


def local_session(app: str, threads: int = 1, log_level: str = "ERROR"):
    """Return the local Spark session (``local[threads]``), workers on this interpreter."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        pytest.fail(f"{INSTALL} ({exc})")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.fail(f"no 'java' on PATH and no JAVA_HOME: {INSTALL}")
    # the workers' Python: this interpreter, also when its venv is not activated (the
    # spark.pyspark.python setting alone left Python workers on the PATH's python3)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master(f"local[{threads}]").appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.pyspark.driver.python", sys.executable)
               .getOrCreate())
    session.sparkContext.setLogLevel(log_level)
    return session
