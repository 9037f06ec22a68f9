"""fastpriv keeps pandas out of a process until something needs it, and then pyarrow sees
pandas exactly as in a process that never deferred it (fastpriv/_lazy_pandas.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


_RUN_COMMAND = """
import runpy, sys
sys.argv = ["fastpriv", *sys.argv[1:]]
try:
    runpy.run_module("fastpriv", run_name="__main__")
except SystemExit as exc:
    print("EXIT", exc.code, "pandas" in sys.modules, file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [
    ["audit", "adult", "--sensitive", "occupation", "--qi", "age", "sex"],
    ["audit", "adult", "--qi", "age", "sex", "race"],
])
def test_a_command_on_a_file_never_imports_pandas(argv):
    proc = _python(_RUN_COMMAND, *argv)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("EXIT 0") or last.startswith("EXIT 1"), proc.stderr[-2000:]
    assert last.endswith("False"), "pandas was imported by " + " ".join(argv)


# what pyarrow makes of pandas objects; the same lines are printed with and without deferral
_PANDAS_VIEW = """
import sys
if sys.argv[1] == "defer":
    from fastpriv._lazy_pandas import defer_pandas
    defer_pandas()
    import pyarrow as pa
    pa.scalar(1), pa.array([1, 2])          # pyarrow at work before pandas is imported
    assert "pandas" not in sys.modules
import json
import pandas as pd
import pyarrow as pa
cat = pd.Series(pd.Categorical(["a", "b", "a"]))
df = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "c": cat,
                   "t": pd.to_datetime(["2020-01-01"] * 3).tz_localize("UTC")})
table = pa.Table.from_pandas(df, preserve_index=False)
print(json.dumps({
    "array_of_categorical": str(pa.array(cat).type),
    "array_of_nullable_int": str(pa.array(df["n"]).type),
    "from_pandas": [str(f.type) for f in table.schema],
    "roundtrip": [str(t) for t in table.to_pandas().dtypes],
    "scalar": str(pa.scalar(pd.Timestamp("2020-01-01")).type),
}))
"""


def test_pyarrow_sees_pandas_as_usual_once_it_is_imported():
    plain = _python(_PANDAS_VIEW, "plain")
    deferred = _python(_PANDAS_VIEW, "defer")
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert deferred.returncode == 0, deferred.stderr[-2000:]
    want = json.loads(plain.stdout)
    assert want["array_of_categorical"].startswith("dictionary")      # the check has teeth
    assert json.loads(deferred.stdout) == want


def test_a_library_call_on_a_file_never_imports_pandas():
    code = ("import sys\nfrom fastpriv import classic\n"
            "a = classic.audit('fastpriv/datasets/data/adult.parquet', qi=['age', 'sex'], "
            "sensitive='occupation')\n"
            "print(a.value, 'pandas' in sys.modules)")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-1] == "False", proc.stdout


def test_a_process_that_imported_pandas_first_is_left_alone():
    code = ("import sys, pandas as pd, pyarrow as pa\nimport fastpriv._arrow\n"
            "print(pa.array(pd.Series(pd.Categorical(['x']))).type)")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("dictionary")


def test_another_thread_importing_pandas_meanwhile_gets_it():
    from fastpriv._lazy_pandas import _Refuse

    got = {}
    refuse = _Refuse()
    import threading

    def other():
        try:
            got["other"] = refuse.find_spec("pandas")
        except ModuleNotFoundError:
            got["other"] = "refused"

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert got["other"] is None                       # not refused: another thread
    with pytest.raises(ModuleNotFoundError):
        refuse.find_spec("pandas")                    # refused: the deferring thread
