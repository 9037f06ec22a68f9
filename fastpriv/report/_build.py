"""Build the audit report: run every model on one release and collect a JSON-ready payload.

The payload (``Report.data``) is the single source of truth: the JSON file is the payload
itself and the HTML page is rendered from it (:mod:`fastpriv.report.html`), so both carry
the same content. Sections embed the models' own ``to_dict()`` results unchanged (the
tests compare them with direct API calls) and add plain-language summaries.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import numbers
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from .._io import to_jsonable
from .._timing import Timer
from ..errors import InputError, InputTypeError
from ..registry import glossary
from ..results import Result
from ._sections import ROWS_PER_GROUP, run_section, section, skipped
from .schema import SCHEMA_ID, SCHEMA_VERSION
from .text import describe_key
from .verdict import build_verdict, verdict_text

__all__ = ["build_report", "Report", "fingerprint"]

_READ_CHUNK = 1 << 20


# ============================================================================ helpers
def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _sha256_file(path: str) -> tuple[str, int]:
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_READ_CHUNK)
            if not chunk:
                break
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n


def _sha256_ipc(table: Any) -> str:
    import pyarrow as pa

    class _Sink:
        def __init__(self) -> None:
            self.h = hashlib.sha256()

        def write(self, b: Any) -> int:
            mv = memoryview(b)
            self.h.update(mv)
            return mv.nbytes

        def flush(self) -> None:
            return None

        @property
        def closed(self) -> bool:
            return False

    sink = _Sink()
    out = pa.PythonFile(sink, mode="w")
    with pa.ipc.new_stream(out, table.schema) as writer:
        writer.write_table(table)
    return sink.h.hexdigest()


def fingerprint(data: Any) -> dict:
    r"""Return the sha256 fingerprint of a report's input.

    * a file: sha256 of its bytes;
    * a directory (Parquet dataset): sha256 over the sorted lines
      ``"<relative path>\\t<sha256 of the file>\\n"`` of every file in it, with the list;
    * an in-memory table (Arrow, pandas, polars): sha256 of the Arrow IPC stream of the
      table as given (schema and record batches; re-chunking or schema metadata change it);
    * a :class:`~fastpriv.Release`: sha256 of the IPC stream of ``release.to_counts()``.
    """
    from ..release import Release

    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if os.path.isdir(path):
            files = []
            for root, _, names in os.walk(path):
                for name in names:
                    full = os.path.join(root, name)
                    files.append(os.path.relpath(full, path))
            files.sort()
            h = hashlib.sha256()
            listed = []
            total = 0
            for rel in files:
                digest, n = _sha256_file(os.path.join(path, rel))
                total += n
                h.update(f"{rel}\t{digest}\n".encode())
                listed.append({"path": rel, "sha256": digest, "bytes": n})
            return {"algorithm": "sha256", "of": "directory listing (path and sha256 of "
                    "every file, sorted)", "value": h.hexdigest(), "bytes": total,
                    "files": listed[:200], "n_files": len(listed)}
        digest, n = _sha256_file(path)
        return {"algorithm": "sha256", "of": "file bytes", "value": digest, "bytes": n,
                "files": [{"path": os.path.basename(path), "sha256": digest, "bytes": n}],
                "n_files": 1}
    if isinstance(data, Release):
        return {"algorithm": "sha256", "of": "Arrow IPC stream of Release.to_counts()",
                "value": _sha256_ipc(data.to_counts()), "bytes": None, "files": [],
                "n_files": 0}
    from .._arrow import as_table

    table = as_table(data, param="data")
    return {"algorithm": "sha256", "of": "Arrow IPC stream of the in-memory table",
            "value": _sha256_ipc(table), "bytes": int(table.nbytes), "files": [],
            "n_files": 0}


def _versions() -> dict:
    import numba
    import pyarrow

    from .._version import __version__

    return {"fastpriv": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__,
            "pyarrow": pyarrow.__version__, "platform": platform.platform()}


# ============================================================================ validation
def _check_c(c: Any) -> list[float]:
    vals = [c] if isinstance(c, numbers.Real) and not isinstance(c, bool) else list(c)
    if not vals:
        raise InputError("c: give at least one confidence threshold in (0, 1]")
    out = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise InputTypeError(f"c: thresholds must be numbers in (0, 1], got {v!r}")
        v = float(v)
        if not 0 < v <= 1:
            raise InputError(f"c: thresholds must be in (0, 1], got {v!r}")
        if v not in out:
            out.append(v)
    return out


def _check_nonneg_int(x: Any, name: str, minimum: int = 0) -> int:
    from .._validation import check_int

    return check_int(x, name, minimum=minimum)


def _check_point(point: Any) -> tuple[int, int, int]:
    try:
        p = tuple(point)
    except TypeError:
        raise InputTypeError(f"point must be three integers (l, k, m), got {point!r}") from None
    if len(p) != 3:
        raise InputError(f"point must be three integers (l, k, m), got {point!r}")
    return tuple(_check_nonneg_int(v, f"point[{i}]") for i, v in enumerate(p))  # type: ignore


def _as_list(x: Any, name: str) -> list | None:
    if x is None:
        return None
    if isinstance(x, str):
        return [x]
    out = list(x)
    for v in out:
        if not isinstance(v, str):
            raise InputTypeError(f"{name}: column names must be strings, got {v!r}")
    return out


# ============================================================================ sections
def _release_section(rel: Any, grouping: str, group: Any, qi: Any) -> dict:
    sizes = rel.sizes
    totals = rel.value_totals
    order = np.argsort(-totals, kind="stable")[:50]
    return section(
        case=rel.case, grouping=grouping,
        group_columns=([group] if isinstance(group, str) else list(group)) if group else
        (list(qi) if grouping == "qi" and qi else []),
        sensitive=rel.sensitive_name, n_groups=rel.n_groups, n_rows=rel.n_rows,
        n_individuals=rel.n_individuals, n_values=rel.n_values,
        group_size={"min": int(sizes.min()), "median": float(np.median(sizes)),
                    "mean": float(sizes.mean()), "max": int(sizes.max())},
        singleton_groups=int((sizes == 1).sum()),
        values=[{"value": rel.values[i], "count": int(totals[i]),
                 "share": float(totals[i] / rel.n_rows)} for i in order.tolist()],
        values_shown=int(order.shape[0]))


def _worst_groups(rel: Any, top: int, row_labels: Any) -> dict:
    n = rel.n_groups
    has = rel.distinct > 0
    share = np.zeros(n)
    share[has] = rel.counts[rel.indptr[:-1][has]] / rel.sizes[has]
    order = np.lexsort((-rel.sizes, -share))[:top]
    rows_known = rel.row_group is not None
    out = []
    for g in order.tolist():
        prof = rel.profile(g)
        entry = {"group": g, "label": rel.group_label(g),
                 "described": describe_key(rel.groups.column_names, rel.group_label(g)),
                 "size": int(rel.sizes[g]),
                 "distinct": int(rel.distinct[g]), "max_share": float(share[g]),
                 "top_value": prof[0][0] if prof else None,
                 "profile": [{"value": v, "count": c} for v, c in prof[:8]],
                 "profile_truncated": len(prof) > 8, "rows": None, "row_labels": None}
        if rows_known:
            rows = rel.rows_of_group(g)
            entry["rows"] = [int(x) for x in rows[:ROWS_PER_GROUP]]
            entry["rows_truncated"] = int(rows.shape[0]) > ROWS_PER_GROUP
            if row_labels is not None:
                entry["row_labels"] = [row_labels[i] for i in entry["rows"]]
        out.append(entry)
    return section(by="max_share", description=(
        "groups where one sensitive value is most concentrated (share of the group's people "
        "holding its most frequent value, then larger groups first: more people exposed)"),
        groups=out,
        rows_known=rows_known)


# ============================================================================ targets
def _targets(rel: Any, sec: dict, c_v: float, table_values: Any, row_labels: Any,
             include_values: bool, ctx: Any) -> list[dict]:
    """Who an adversary would go after, and why: every model's ``targets``, most certain first."""
    from ..registry import hooks

    out: list[dict] = []
    for fn in hooks("targets"):
        for t in fn(ctx, sec):
            row = t.get("row")
            t.setdefault("rows", None)
            t["row_label"] = row_labels[row] if (row_labels is not None and row is not None) \
                else None
            if include_values and table_values is not None and row is not None:
                t["actual_value"] = table_values[row]
            out.append(t)
    out.sort(key=lambda t: -float(t["certainty"]))
    for t in out:
        t["exceeds_threshold"] = bool(float(t["certainty"]) >= c_v)
    return out


# ============================================================================ glossary
GLOSSARY = (
    ("release", "The published version of the data: people are put into groups, and for "
                "each group the list of its sensitive values is published without saying "
                "who has which."),
    ("group", "A set of people published together (also called a bucket or an equivalence "
              "class). Everyone who knows who is in a group learns the group's values."),
    ("sensitive value", "The value that must stay private (for example an illness, an "
                        "income class or an occupation)."),
    ("quasi-identifier (QI)", "Attributes such as age, sex or postcode that are not secret "
                              "but, combined, can point at a person."),
    ("background knowledge", "What an adversary knows besides the release: facts about "
                             "people, their relatives, or statistics."),
    ("row", "A line of the input table, numbered from 0 in input order."),
    ("k-anonymity", "Every group has at least k people."),
    ("(α,k)-anonymity", "No value makes up more than a share α of any group: α is how sure "
                        "one can be of a person's value from the release alone."),
    ("distinct ℓ-diversity", "Every group contains at least ℓ different sensitive values."),
    ("entropy ℓ-diversity", "Every group's values are as varied as at least ℓ equally common "
                            "values (measured by entropy)."),
    ("recursive (c,ℓ)-diversity", "In every group the most common value is less than c times "
                                  "as frequent as the values from the ℓ-th most common on."),
    ("t-closeness", "Every group's distribution of values is within distance t of the whole "
                    "table's (earth mover's distance)."),
    ("β-likeness, δ-disclosure", "Limits on how much more (β) or how differently (δ, in log "
                                 "ratio) a value occurs in a group than in the whole table."),
    ("(c,k)-safety", "Even an adversary who knows k facts about the people in the release "
                     "(basic implications such as “if Ann has flu then Bob has flu”, or "
                     "negations such as “Bob does not have cancer”) is less than c sure of "
                     "anyone's sensitive value (Martin et al., 2007)."),
    ("maximum disclosure", "The highest certainty any such adversary can reach about any "
                           "person; the disclosure curve shows it for k = 0, 1, 2, …"),
    ("privacy skyline (ℓ, k, m)", "Knowledge in three dimensions: ℓ values the target does "
                                  "not have, the values of k other people, and m people who "
                                  "have the target's value if the target has it (a "
                                  "“same-value family”, e.g. relatives with a hereditary "
                                  "illness) (Chen et al., 2007)."),
    ("breach probability (BP)", "The highest certainty about a target's value that an "
                                "adversary with a given amount of (ℓ, k, m) knowledge can "
                                "reach."),
    ("knowledge skyline", "The largest amounts of (ℓ, k, m) knowledge under which the "
                          "release stays safe at confidence c; ∞ means “any amount”."),
    ("r-robustness", "Even with statistics linking quasi-identifiers to sensitive values "
                     "(e.g. “30% of people aged 30–40 in the private sector are managers”), "
                     "nobody can be linked to a value with probability above 1/r (Wong et "
                     "al.)."),
    ("foreground-knowledge attack", "The adversary learns those statistics from the release "
                                    "itself (its utility) and uses them as in r-robustness."),
    ("witness", "The concrete worst case behind a number: which group, which people and "
                "which values an adversary would use."),
    ("fingerprint", "A sha256 checksum of the input, so that anyone can check that the report "
                    "belongs to this exact data."),
)


# ============================================================================ report object
@dataclass(frozen=True, eq=False)
class Report(Result):
    """A complete audit report.

    ``data`` is the JSON-ready payload (schema in :mod:`fastpriv.report.schema`);
    :meth:`to_html` renders it and :meth:`write` writes both files. ``value`` is the
    number of verdict checks that fail (0: every check that ran holds); ``params`` the
    parameters every model ran with; the report's worst cases are its ``targets``
    (plain dicts), so ``witness`` is None.
    """

    data: dict

    @property
    def value(self) -> int:
        """Number of verdict checks that fail."""
        return len(self.data["verdict"]["violated"])

    @property
    def params(self) -> dict:
        """The parameters the report was built with."""
        return self.data["parameters"]

    @property
    def witness(self) -> None:
        """None: the worst cases are listed in ``data["targets"]``."""
        return None

    def to_dict(self) -> dict:
        """Return the JSON-ready payload."""
        return self.data

    def to_json(self, indent: int = 2) -> str:
        """Return the payload as JSON text (``inf`` written as the string ``"inf"``)."""
        import json

        return json.dumps(self.data, indent=indent, allow_nan=False, ensure_ascii=False) + "\n"

    def to_html(self) -> str:
        """Return the self-contained HTML page."""
        from .html import render_html

        return render_html(self.data)

    @property
    def verdict(self) -> dict:
        """The verdict section (checks, satisfied/violated ids, key risk)."""
        return self.data["verdict"]

    def summary(self, *, verbose: bool = False) -> str:
        """Return the verdict as plain text: PASS/FAIL per check, the key risk, the remedy."""
        return verdict_text(self.data["verdict"], verbose=verbose)

    @property
    def exit_code(self) -> int:
        """0 when every check that ran holds, 1 when one fails (the CLI's exit status)."""
        return int(self.data["verdict"]["exit_code"])

    def write(self, html: str | os.PathLike | None = None, json: str | os.PathLike | None = None,
              *, overwrite: bool = False, inputs: Sequence[Any] = ()) -> list[str]:
        """Write the HTML and/or JSON atomically (never over an input); return the paths."""
        from .._io import write_text

        src = self.data["input"].get("path")
        ins = list(inputs) + ([src] if src else [])
        out = []
        if json is not None:
            out.append(write_text(json, self.to_json(), overwrite=overwrite, inputs=ins))
        if html is not None:
            out.append(write_text(html, self.to_html(), overwrite=overwrite, inputs=ins))
        return out


# ============================================================================ entry point
def build_report(data: Any, *, sensitive: str | None = None, group: Any = None,
                 qi: Sequence[str] | None = None, individual: str | None = None,
                 nulls: str = "error", knowledge: Any = None, knowledge_fallback: Any = None,
                 sigma: Sequence[Any] | None = None, c: Any = (0.8, 0.95), k: int = 3,
                 k_max: int | None = None, point: Sequence[int] = (1, 1, 1),
                 l: int | None = None,  # noqa: E741 - the spec's name
                 min_size: int = 5, min_l: int = 3, max_t: float = 0.2, r: float | None = None,
                 max_set_size: int = 2, sensitive_values: Sequence[Any] | None = None,
                 top: int = 10, include_individual_values: bool = False,
                 row_label: str | None = None, robustness: bool = True, attack: bool = True,
                 stream: bool = False, title: str | None = None,
                 source: str | None = None, data_spec: str | None = None,
                 knowledge_skylines: bool = True,
                 remedy_qi: Sequence[str] | None = None,
                 remedy_options: dict[str, Any] | None = None, risk: bool = True,
                 max_risk: float = 0.2, population: Any = None,
                 weight: str | None = None, thresholds: dict | None = None,
                 hierarchies: Any = None, options: dict | None = None,
                 sampling_weight: str | None = None) -> Report:
    """Audit a release with every model fastpriv implements and return a :class:`Report`.

    Parameters
    ----------
    data : table-like, path or Release
        The data: a pyarrow/pandas/polars table or a Parquet/CSV path with one row per
        individual (the published groups plus the sensitive value), or an already built
        :class:`~fastpriv.Release` (then the row-level sections — r-robustness, the
        foreground attack and row numbers of individuals — are skipped, with the reason).
    sensitive : str, optional
        Sensitive column (default for a Release: its own). Without one (a table and
        ``qi``), the report measures what does not read a sensitive attribute: k-anonymity
        of the QI classes (section ``classes``) and re-identification risk; every model of
        attribute disclosure is skipped with the reason.
    group : str or list of str, optional
        Group-id column(s) of a bucketized release. With ``group``, ``qi`` names the exact
        quasi-identifier columns the adversary knows (used by r-robustness and the
        foreground attack).
    qi : list of str, optional
        Without ``group``: the generalized QI columns, groups = their distinct tuples (the
        distribution attacks are then skipped: every member of a group has the same QI
        values). With ``group``: the exact QI columns known to the adversary.
    individual : str, optional
        Individual-id column (MVPI tables).
    nulls : {"error", "drop", "value"}
        Null policy for the used columns (row numbers refer to the rows kept).
    knowledge : Knowledge or path, optional
        The adversary's distributions for r-robustness (default: derived from the data with
        attribute sets up to ``max_set_size``, the worst case). A path is read with
        :meth:`Knowledge.from_table` (long format with an ``attributes`` column).
    knowledge_fallback : float or mapping, optional
        With a knowledge *path*: the probability of signatures / pairs the file does not
        list (as ``fastpriv robustness --fallback``).
    sigma : list, optional
        Sensitive values whose knowledge skyline is computed (default: every value, or the
        :data:`MAX_SKYLINE_VALUES` most exposed ones).
    c : float or list of float in (0, 1]
        Confidence thresholds (an adversary succeeds when he is at least c sure). Knowledge
        skylines and the largest (c,k)-safe k are reported for each; the **verdict uses the
        smallest** (the strictest).
    k, k_max : int
        Pieces of background knowledge for the (c,k)-safety verdict (and its witnesses);
        last k of the disclosure curves (default max(12, k): Martin et al. use 12).
    point : (l, k, m)
        Skyline point of the verdict: BP_σ(ℓ, k, m) < c for every value σ.
    l : int, optional
        ℓ of recursive (c,ℓ)-diversity (default: the achieved distinct ℓ, as pycanon).
    min_size, min_l, max_t :
        Classical thresholds of the verdict: k-anonymity k ≥ ``min_size``, distinct and
        entropy ℓ-diversity ℓ ≥ ``min_l``, t-closeness t ≤ ``max_t``.
    r : float, optional
        r of r-robustness and of the foreground attack (threshold 1/r; default 1/c of the
        verdict, so that every model uses the same certainty threshold).
    max_set_size : int
        Largest QI attribute set of the adversary's statistics (r-robustness, attack).
    sensitive_values : list, optional
        X_s of r-robustness and of the foreground attack (default: every value).
    top : int
        Number of worst groups, problematic tuples and attacked tuples listed.
    include_individual_values : bool
        Also write the true sensitive value of every individual the report names (default:
        never; the report then holds only published group-level values and the
        adversary's inferences).
    row_label : str, optional
        Column whose value names each row in the report (e.g. a record number).
    robustness, attack : bool
        Run the r-robustness audit / the foreground attack when possible.
    stream : bool
        Stream the file in record batches (large inputs; no row-level sections).
    title, source, data_spec : str, optional
        Report title; the input's name (default: its path, or "in-memory table"); how the
        verdict's remedy commands name the data (default: its path, else ``DATA``).
    knowledge_skylines : bool
        Compute the knowledge skylines of the chosen values (default); ``False`` keeps only
        the skyline check of the verdict (``fastpriv audit``).
    remedy_qi : list of str, optional
        The quasi-identifiers the remedy commands generalize (default: ``qi``).
    remedy_options : dict, optional
        How the remedy commands read the data, as it was read for this report: ``weight``,
        ``nulls``, ``encoding``, ``delimiter`` (see :func:`fastpriv.report.verdict.
        anonymize_command`; default: ``weight`` and ``nulls``). The command line passes its
        own, e.g. for a Release built from a weighted file.
    risk, max_risk, population :
        Re-identification risk of the QI classes (:mod:`fastpriv.risk`; needs ``qi`` and the
        rows): PASS when the highest prosecutor risk is at most ``max_risk``; ``population``
        (a size or a table) adds journalist risk and population uniques.
    weight : str, optional
        Multiplicity column: each row stands for that many identical rows (a ``GROUP BY``
        count); every section, the risk section included, counts people.
    thresholds : dict, optional
        Thresholds of the verdict models declared in :mod:`fastpriv.registry` (e.g.
        ``{"min_k_map": 5, "max_delta": 0.5}``; None or absent: not checked). Each model
        given a threshold adds its section under ``models`` and its checks to the verdict.
    hierarchies : folder or mapping, optional
        Generalization hierarchies of the ``qi`` (as :func:`~fastpriv.anonymize.
        lattice_search` reads them): adds the section ``frontier``, the privacy–utility
        frontier of every generalization meeting k-anonymity at ``min_size``
        (:func:`fastpriv.frontier.frontier`; not part of the verdict).
    options : dict, optional
        Values of the options the verdict models declare in :mod:`fastpriv.registry`
        (:class:`~fastpriv.registry.Option`, e.g. ``{"hierarchies": "bundled"}``); each model
        given a threshold reads its own. ``hierarchies`` is passed on as such an option
        unless ``options`` names it.
    sampling_weight : str, optional
        Column of survey weights for the re-identification risk (finite, > 0: the
        population members each record stands for), as in :func:`fastpriv.risk.audit`:
        each class's sum estimates its population size (``parameters.sampling_weight``).

    Returns
    -------
    Report

    Examples
    --------
    >>> import fastpriv as fp
    >>> from fastpriv.report import build_report
    >>> rep = build_report(fp.datasets.load_adult(), sensitive="occupation",
    ...                    qi=["age", "sex", "race"])                     # doctest: +SKIP
    >>> rep.write("report.html", json="report.json")                      # doctest: +SKIP

    """
    t_start = time.perf_counter()
    o = _options(c=c, k=k, k_max=k_max, point=point, l=l, min_size=min_size, min_l=min_l,
                 max_t=max_t, r=r, max_set_size=max_set_size, top=top, nulls=nulls,
                 group=group, qi=qi, sigma=sigma, sensitive_values=sensitive_values,
                 include_individual_values=include_individual_values,
                 robustness=robustness, attack=attack, stream=stream)
    timings: dict[str, float] = {}
    with Timer() as tf:
        fp = fingerprint(data)
    timings["fingerprint"] = tf.seconds
    with Timer() as tr:
        inp = _load_input(data, sensitive=sensitive, o=o, individual=individual,
                          row_label=row_label, weight=weight, sampling_weight=sampling_weight)
    timings["release"] = tr.seconds
    if inp.rel is not None:
        for v in o.sigma or []:                   # parameter errors before any model runs
            inp.rel.code_of(v, param="sigma")
        for v in o.sensitive_values or []:
            inp.rel.code_of(v, param="sensitive_values")
    thresholds = {k: v for k, v in (thresholds or {}).items() if v is not None}
    params = _parameters(o, inp.sensitive, individual=individual, row_label=row_label,
                         knowledge=knowledge, max_risk=max_risk, weight=weight)
    params["sampling_weight"] = sampling_weight
    params["thresholds"] = thresholds
    sec, ctx = _sections(inp, o, knowledge=knowledge, knowledge_fallback=knowledge_fallback,
                         knowledge_skylines=knowledge_skylines, risk=risk, max_risk=max_risk,
                         population=population, weight=weight,
                         sampling_weight=sampling_weight)
    if inp.rel is not None:
        sec["release"]["seconds"] = timings["release"]
    if hierarchies is not None:
        sec["frontier"] = _frontier_section(data, o, hierarchies=hierarchies,
                                            population=population, weight=weight)
    if thresholds:
        from ..registry import run_verdict_models

        sec["models"] = run_verdict_models(
            _classes_of(inp, o, weight, sampling_weight), population=population,
            thresholds=thresholds,
            release=inp.rel, options={"hierarchies": hierarchies, **(options or {})})
    table_values = None
    if o.include_individual_values and inp.table is not None and inp.rel is not None \
            and inp.rel.case == "svpi":
        table_values = inp.table.column(inp.sensitive).to_pylist()
    with Timer() as tt:
        targets = [] if inp.rel is None else _targets(
            inp.rel, sec, o.c_v, table_values, inp.row_labels, o.include_individual_values,
            ctx)
    verdict = build_verdict(sec, {**params, "qi": list(remedy_qi) if remedy_qi else o.qi},
                            inp.sensitive, data_spec=data_spec or inp.path,
                            remedy_options=remedy_options)
    timings.update({name: x["seconds"] for name, x in sec.items() if "seconds" in x})
    timings["targets"] = tt.seconds
    timings["total"] = time.perf_counter() - t_start
    if source is None:
        source = inp.path or ("Release (in memory)" if inp.kind == "release"
                              else "in-memory table")
    return Report(to_jsonable(_payload(
        inp, sec, title=title or f"Privacy audit of {source}", source=source,
        fingerprint=fp, params=params, verdict=verdict, targets=targets,
        values_included=table_values is not None, timings=timings)))


# ============================================================================ steps
def _options(*, c: Any, k: Any, k_max: Any, point: Any, l: Any, min_size: Any,  # noqa: E741
             min_l: Any, max_t: Any, r: Any, max_set_size: Any, top: Any, nulls: str,
             group: Any, qi: Any, sigma: Any, sensitive_values: Any,
             include_individual_values: Any, robustness: Any, attack: Any,
             stream: Any) -> SimpleNamespace:
    """Check :func:`build_report`'s options; return them normalized (``c_v``: the verdict's c)."""
    from .._validation import check_choice

    check_choice(nulls, "nulls", ("error", "drop", "value"))
    cs = _check_c(c)
    c_v = min(cs)
    k = _check_nonneg_int(k, "k")
    k_max = max(12, k) if k_max is None else _check_nonneg_int(k_max, "k_max")
    if k_max < k:
        raise InputError(f"k_max ({k_max}) must be at least k ({k})")
    if l is not None:
        l = _check_nonneg_int(l, "l", minimum=1)  # noqa: E741
    if isinstance(max_t, bool) or not isinstance(max_t, numbers.Real) or not 0 <= max_t <= 1:
        raise InputError(f"max_t must be a number in [0, 1], got {max_t!r}")
    if r is not None:
        if isinstance(r, bool) or not isinstance(r, numbers.Real) or not r > 1:
            raise InputError(f"r must be a number > 1, got {r!r}")
        r = float(r)
    elif c_v < 1:
        r = 1.0 / c_v
    if sigma is not None and (isinstance(sigma, (str, bytes)) or not hasattr(sigma, "__iter__")):
        sigma = [sigma]
    for name, flag in (("include_individual_values", include_individual_values),
                       ("robustness", robustness), ("attack", attack), ("stream", stream)):
        if not isinstance(flag, bool):
            raise InputTypeError(f"{name} must be True or False, got {flag!r}")
    return SimpleNamespace(
        nulls=nulls, cs=cs, c_v=c_v, k=k, k_max=k_max, point=_check_point(point), l=l,
        min_size=_check_nonneg_int(min_size, "min_size", minimum=1),
        min_l=_check_nonneg_int(min_l, "min_l", minimum=1), max_t=float(max_t), r=r,
        max_set_size=_check_nonneg_int(max_set_size, "max_set_size", minimum=1),
        top=_check_nonneg_int(top, "top", minimum=1), group=_as_list(group, "group"),
        qi=_as_list(qi, "qi"), sigma=list(sigma) if sigma is not None else None,
        sensitive_values=list(sensitive_values) if sensitive_values is not None else None,
        include_individual_values=include_individual_values, robustness=robustness,
        attack=attack, stream=stream)


@dataclass
class _Input:
    """The loaded input: the release, the rows (when kept) and how they were read."""

    rel: Any
    sensitive: str | None
    kind: str
    grouping: str
    path: str | None = None
    table: Any = None
    n_dropped: int = 0
    row_reason: str | None = None
    row_labels: list | None = None
    classes: Any = None


def _load_input(data: Any, *, sensitive: str | None, o: SimpleNamespace,
                individual: str | None, row_label: str | None,
                weight: str | None = None, sampling_weight: str | None = None) -> _Input:
    """Read the input (a Release, a table, a path; streamed or not) into an :class:`_Input`.

    Without a sensitive column (a table and ``qi``) the input is counted into the classes
    of identical QI values (``classes``) and ``rel`` is None.
    """
    from ..release import Release

    if isinstance(data, Release):
        if sensitive is not None and sensitive != data.sensitive_name:
            raise InputError(f"sensitive={sensitive!r} but the release was built from "
                             f"{data.sensitive_name!r}")
        names = list(data.groups.column_names)
        qi_groups = bool(o.qi) and sorted(o.qi) == sorted(names)
        if o.group or (o.qi and not qi_groups) or individual:
            raise InputError("group/qi/individual are for tables; a Release already has "
                             f"its groups (qi= may name its group columns {names})")
        return _Input(rel=data, sensitive=data.sensitive_name, kind="release",
                      grouping="qi" if qi_groups else "release", row_reason=(
                          "the input is an already built Release: it has no rows or "
                          "quasi-identifier columns, so the row-level sections (r-robustness, "
                          "the foreground attack, row numbers of individuals) are skipped"))
    if sensitive is None:
        return _load_classes(data, o=o, individual=individual, weight=weight,
                             sampling_weight=sampling_weight)
    if not isinstance(sensitive, str):
        raise InputTypeError("sensitive must be the name of the sensitive column")
    if not o.group and not o.qi:
        raise InputError("give group= (a group-id column) and/or qi= (quasi-"
                         "identifier columns)")
    path = os.fspath(data) if isinstance(data, (str, os.PathLike)) else None
    kind = ("directory" if path and os.path.isdir(path) else "file") if path else "table"
    grouping = "group" if o.group else "qi"
    by = {"group": o.group, "qi": None} if o.group else {"group": None, "qi": o.qi}
    if o.stream:
        if path is None:
            raise InputError("stream=True needs a file or directory path")
        if individual:
            raise InputError("stream=True is for SVPI tables (no individual column)")
        rel = Release.from_batches(path, sensitive=sensitive, nulls=o.nulls, weight=weight,
                                   **by)
        return _Input(rel=rel, sensitive=sensitive, kind=kind, grouping=grouping, path=path,
                      row_reason=("the input was streamed in record batches (a large input), "
                                  "so its rows are not kept: row-level sections are skipped"))
    from .._arrow import as_table

    needed = list(dict.fromkeys([sensitive] + (o.group or []) + (o.qi or [])
                                + ([individual] if individual else [])
                                + ([row_label] if row_label else [])
                                + ([weight] if weight else [])
                                + ([sampling_weight] if sampling_weight else [])))
    table = as_table(data, columns=needed, param="data")
    kw = {"individual": individual} if individual else {}
    if o.group and o.qi:
        by = {"group": o.group, "qi": o.qi}    # the row view too, under one null policy
    rel = Release.from_table(table, sensitive=sensitive, nulls=o.nulls, weight=weight, **by,
                             **kw)
    if rel.row_group is None and o.nulls == "drop":
        # a weighted release keeps no row index: count the rows with a null in the columns
        # the release read (its row count would say nothing was dropped)
        policed = [sensitive] + (by["group"] or []) + (by["qi"] or []) + \
            ([individual] if individual else [])
        kept = table.num_rows - _rows_with_nulls(table, policed)
    else:
        kept = _kept_rows(rel, table)
    return _Input(rel=rel, sensitive=sensitive, kind=kind, grouping=grouping, path=path,
                  table=table, n_dropped=table.num_rows - kept,
                  row_labels=table.column(row_label).to_pylist() if row_label else None)


def _load_classes(data: Any, *, o: SimpleNamespace, individual: str | None,
                  weight: str | None, sampling_weight: str | None = None) -> _Input:
    """Count a table without a sensitive column into its QI classes (``rel`` is None)."""
    from .._arrow import as_table
    from ..risk import class_counts

    if o.group or individual or not o.qi:
        raise InputError("sensitive: without a sensitive column give qi= (the quasi-"
                         "identifier columns; k-anonymity and re-identification risk are "
                         "measured over their classes) and no group=/individual=")
    if o.stream:
        raise InputError("stream=True needs a sensitive column; the QI classes are counted "
                         "from the quasi-identifier columns alone")
    path = os.fspath(data) if isinstance(data, (str, os.PathLike)) else None
    kind = ("directory" if path and os.path.isdir(path) else "file") if path else "table"
    extra = [c for c in (weight, sampling_weight) if c]
    table = as_table(data, columns=list(dict.fromkeys(o.qi + extra)), param="data")
    cc = class_counts(table, qi=o.qi, weight=weight, sampling_weight=sampling_weight,
                      nulls=o.nulls)
    kept = table.num_rows if o.nulls != "drop" else \
        table.num_rows - _rows_with_nulls(table, o.qi)
    return _Input(rel=None, sensitive=None, kind=kind, grouping="qi", path=path, table=table,
                  n_dropped=table.num_rows - kept, classes=cc,
                  row_reason="no sensitive column: the row-level models do not apply")


def _rows_with_nulls(table: Any, columns: list[str]) -> int:
    """Count the rows of ``table`` with a null in any of ``columns``."""
    import pyarrow.compute as pc

    mask = None
    for c in columns:
        m = pc.is_null(table.column(c), nan_is_null=True)
        mask = m if mask is None else pc.or_(mask, m)
    return int(pc.sum(mask).as_py() or 0) if mask is not None else 0


def _classes_of(inp: _Input, o: SimpleNamespace, weight: str | None,
                sampling_weight: str | None = None) -> Any:
    """Return the input's QI classes for the registry's verdict models (None: none).

    Counted from the input table under the report's null policy (the classes of the risk
    section: ``nulls="drop"`` drops the records with a null QI value, not those whose only
    null is the sensitive value), or from a release whose groups are the QI tuples; a
    bucketized release without ``qi`` has none.
    """
    from ..risk import class_counts

    if inp.classes is not None:
        return inp.classes
    if not o.qi:
        return None
    if inp.table is not None:
        return class_counts(inp.table, qi=o.qi, weight=weight,
                            sampling_weight=sampling_weight, nulls=o.nulls)
    return class_counts(inp.rel, qi=o.qi) if inp.grouping == "qi" else None


def _kept_rows(rel: Any, table: Any) -> int:
    """Rows of ``table`` that the release holds (the rest were dropped for nulls)."""
    return int(table.num_rows if rel.row_group is None else rel.row_group.shape[0])


def _parameters(o: SimpleNamespace, sensitive: str | None, *, individual: str | None,
                row_label: str | None, knowledge: Any, max_risk: float,
                weight: str | None) -> dict:
    """Return the report's ``parameters`` section (what every model ran with)."""
    return {"sensitive": sensitive, "group": o.group, "qi": o.qi, "individual": individual,
            "weight": weight,
            "nulls": o.nulls, "c": o.cs, "c_verdict": o.c_v, "k": o.k, "k_max": o.k_max,
            "point": list(o.point), "l": o.l, "min_size": o.min_size, "min_l": o.min_l,
            "max_t": o.max_t, "r": o.r, "max_set_size": o.max_set_size,
            "max_risk": float(max_risk),
            "sigma": o.sigma, "sensitive_values": o.sensitive_values, "top": o.top,
            "include_individual_values": o.include_individual_values,
            "row_label": row_label, "robustness": o.robustness, "attack": o.attack,
            "stream": o.stream,
            "knowledge": (os.fspath(knowledge) if isinstance(knowledge, (str, os.PathLike))
                          else ("given (Knowledge object)" if knowledge is not None
                                else f"derived from the data (attribute sets up to "
                                     f"{o.max_set_size}, the worst case)"))}


def _sections(inp: _Input, o: SimpleNamespace, *, knowledge: Any, knowledge_fallback: Any,
              knowledge_skylines: bool, risk: bool, max_risk: float,
              population: Any, weight: str | None = None,
              sampling_weight: str | None = None) -> tuple[dict[str, Any], Any]:
    """Run every model's section (a model refusing the input gives a 'failed' section).

    The models' ``section`` functions (:mod:`fastpriv.registry`) read the report's context
    (returned too: the models' ``targets`` read it); without a sensitive column the release
    and the worst groups are skipped and the QI classes are described instead.
    """
    from ..registry import hooks

    rel = inp.rel
    ctx = SimpleNamespace(rel=rel, inp=inp, o=o, knowledge=knowledge,
                          knowledge_fallback=knowledge_fallback,
                          knowledge_skylines=knowledge_skylines, risk=risk,
                          max_risk=max_risk, population=population, weight=weight,
                          sampling_weight=sampling_weight)
    sec: dict[str, Any] = {}
    if rel is None:
        from ._classes import NO_SENSITIVE_REASON, classes_section

        sec["release"] = skipped(NO_SENSITIVE_REASON)
        sec["worst_groups"] = skipped(NO_SENSITIVE_REASON)
        sec["classes"] = run_section(classes_section, inp.classes, top=o.top)
    else:
        sec["release"] = _release_section(rel, inp.grouping, o.group, o.qi)
    for fn in hooks("section"):
        sec.update(fn(ctx))
    if rel is not None:
        sec["worst_groups"] = run_section(_worst_groups, rel, o.top, inp.row_labels)
    return sec, ctx


def _frontier_section(data: Any, o: SimpleNamespace, *, hierarchies: Any, population: Any,
                      weight: str | None) -> dict:
    """Return the privacy–utility frontier of the QIs at the verdict's k (section ``frontier``)."""
    if o.group is not None or not o.qi:
        return skipped("the frontier generalizes the quasi-identifiers: give qi= without "
                        "group=")
    if o.nulls not in ("error", "drop"):
        return skipped(f"the lattice reads nulls='error' or 'drop', not {o.nulls!r}")
    from ..frontier import frontier

    size = population if isinstance(population, numbers.Real) and \
        not isinstance(population, bool) else None
    def run() -> dict:
        d = frontier(data, qi=o.qi, hierarchies=hierarchies, min_size=o.min_size,
                     population=size, nulls=o.nulls, weight=weight).to_dict()
        d["phases_s"] = d.pop("seconds")   # the section's own "seconds" is its total
        return section(**d)

    return run_section(run)


def _payload(inp: _Input, sec: dict, *, title: str, source: str, fingerprint: dict,
             params: dict, verdict: dict, targets: list, values_included: bool,
             timings: dict) -> dict:
    """Assemble the report's payload (the JSON document; schema in :mod:`.schema`).

    The models' sections (:func:`fastpriv.registry.report_sections`) come after the release,
    those of the models reading the QI classes after the declared verdict models'.
    """
    from ..registry import report_sections

    table = inp.table
    return {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "title": title,
        "created": _now(),
        "generator": _versions(),
        "input": {"kind": inp.kind, "source": source, "path": inp.path,
                  "fingerprint": fingerprint,
                  "n_input_rows": None if table is None else int(table.num_rows),
                  "n_rows_dropped_for_nulls": inp.n_dropped,
                  "rows_available": (table is not None and inp.rel is not None
                                     and inp.rel.row_group is not None),
                  "row_level_reason": inp.row_reason},
        "parameters": params,
        "verdict": verdict,
        "release": sec["release"],
        **{name: sec[name] for name in report_sections(classes=False)},
        "worst_groups": sec["worst_groups"],
        **({"classes": sec["classes"]} if "classes" in sec else {}),
        **({"models": {k: v["section"] for k, v in sec["models"].items()}}
           if sec.get("models") else {}),
        **{name: sec[name] for name in report_sections(classes=True) if name in sec},
        **({"frontier": sec["frontier"]} if "frontier" in sec else {}),
        "targets": {"individual_values_included": values_included, "items": targets},
        "timings_s": timings,
        "glossary": [{"term": t, "definition": d} for t, d in (*GLOSSARY, *glossary())],
    }
