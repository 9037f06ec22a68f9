"""Render every performance number of README.md from ``benchmarks/results/*.json``.

    python -m benchmarks.readme_tables            # rewrite README.md in place
    python -m benchmarks.readme_tables --check    # exit 1 and print a diff if they disagree

Each generated span of the README sits between two marker comments::

    <!-- perf:NAME -->generated text<!-- /perf:NAME -->

A marker followed by a line break makes a block (a table or a paragraph on lines of its
own); a marker inside a line makes an inline span, wrapped to the README's width with the
indentation of its line (a list item's text continues two spaces in). The text of every
span is produced by the renderer registered under NAME in :data:`BLOCKS` from the result
files alone, so a README number cannot differ from the JSON it cites: edit the renderer
(the wording) or rerun the benchmark (the numbers), then rerun this script.

Only full-mode results are read (``"mode": "full"``; smoke results live in
``results/smoke/`` and are never quoted). A file or key a renderer needs and the JSON lacks
raises :class:`ReadmeDataError` naming the file and the key path.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import statistics
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from fastpriv.pushdown import PAIRS_PER_BUCKET

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = Path(__file__).resolve().parent / "results"
WIDTH = 95

MARKER = re.compile(r"<!-- perf:([\w-]+) -->(.*?)<!-- /perf:\1 -->", re.S)


class ReadmeDataError(KeyError):
    """A result file or a key a README block needs is missing or unusable."""

    def __str__(self) -> str:
        return str(self.args[0])


# ------------------------------------------------------------------ reading results
class Results:
    """The full-mode result files of one directory, read once each."""

    def __init__(self, folder: Path = RESULTS) -> None:
        self.folder = Path(folder)
        self._cache: dict[str, Any] = {}
        self.used: set[str] = set()       # every file read
        self.touched: set[str] = set()    # files read since the caller last cleared it

    def load(self, name: str) -> Any:
        """The parsed JSON of ``name`` (``"ck_synthetic.json"``); it must be a full run."""
        if name not in self._cache:
            path = self.folder / name
            if not path.is_file():
                raise ReadmeDataError(f"benchmarks/results/{name}: file missing")
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("mode", "full") != "full":
                raise ReadmeDataError(f"benchmarks/results/{name}: mode is "
                                      f"{data.get('mode')!r}, the README quotes full runs only")
            self._cache[name] = data
        self.used.add(name)
        self.touched.add(name)
        return self._cache[name]

    def get(self, name: str, *path: str | int) -> Any:
        """``data[p0][p1]...`` of file ``name``; a missing step names the file and the path."""
        node = self.load(name)
        for i, step in enumerate(path):
            try:
                node = node[step]
            except (KeyError, IndexError, TypeError):
                where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                                for p in path[: i + 1]).lstrip(".")
                raise ReadmeDataError(
                    f"benchmarks/results/{name}: no key {where!r} (needed by the README; "
                    f"update benchmarks/readme_tables.py if the benchmark renamed it)") from None
        if node is None:
            raise ReadmeDataError(f"benchmarks/results/{name}: key "
                                  f"{'.'.join(map(str, path))!r} is null (a smoke or failed run?)")
        return node

    def rows(self, name: str, *path: str | int, where: Callable[[dict], bool] | None = None,
             ) -> list[dict]:
        """The list at ``path`` (optionally filtered); an empty selection is an error."""
        items = self.get(name, *path)
        if isinstance(items, dict):
            items = list(items.values())
        picked = [r for r in items if where is None or where(r)]
        if not picked:
            raise ReadmeDataError(f"benchmarks/results/{name}: no entry of "
                                  f"{'.'.join(map(str, path))!r} matches what the README quotes")
        return picked

    def col(self, name: str, items: Iterable[dict], *key: str) -> list[float]:
        """``item[key...]`` of every item; a missing key names the file."""
        out = []
        for i, item in enumerate(items):
            node: Any = item
            for k in key:
                if not isinstance(node, dict) or k not in node:
                    raise ReadmeDataError(f"benchmarks/results/{name}: entry {i} has no key "
                                          f"{'.'.join(key)!r} (needed by the README)")
                node = node[k]
            if node is None:
                raise ReadmeDataError(f"benchmarks/results/{name}: entry {i} has "
                                      f"{'.'.join(key)!r} = null (a smoke or failed run?)")
            out.append(node)
        return out


# ------------------------------------------------------------------ number formats
def num(x: float) -> str:
    """Two significant digits below 10, whole numbers above (thousands separated)."""
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    x = float(x)
    if abs(x) >= 99.5:
        return f"{x:,.0f}"
    if abs(x) >= 9.95:
        return f"{x:.0f}"
    if abs(x) >= 0.995:
        return f"{x:.1f}"
    return f"{x:.2g}"


def span(values: Sequence[float] | float, fmt: Callable[[float], str] = num) -> str:
    """``"lo–hi"`` of the values in ``fmt``, or one number when both print the same."""
    vals = list(values) if isinstance(values, (list, tuple)) else [values]
    lo, hi = fmt(min(vals)), fmt(max(vals))
    return lo if lo == hi else f"{lo}–{hi}"


def times(values: Sequence[float] | float) -> str:
    """A ratio or a range of ratios: ``"109–124×"``."""
    return span(values) + "×"


def dur(values: Sequence[float] | float) -> str:
    """Seconds in the unit of the largest: ``"88–127 µs"``, ``"26–34 ms"``, ``"1.8–3.6 s"``."""
    vals = [float(v) for v in (values if isinstance(values, (list, tuple)) else [values])]
    top = max(vals)
    scale, unit = (1e6, "µs") if top < 1e-3 else (1e3, "ms") if top < 1 else (1, "s")
    return f"{span([v * scale for v in vals])} {unit}"


def mib(values: Sequence[float] | float) -> str:
    """Memory given in MiB, printed in MiB or GiB."""
    vals = [float(v) for v in (values if isinstance(values, (list, tuple)) else [values])]
    if max(vals) >= 1024:
        return f"{span([v / 1024 for v in vals])} GiB"
    return f"{span(vals)} MiB"


def count(n: float) -> str:
    """Rows or groups: ``10M``, ``100k``, ``1.19M``, ``45,222``."""
    n = int(n)
    for div, suffix in ((10**6, "M"), (10**3, "k")):
        if n >= div:
            q = n / div
            return f"{q:.0f}{suffix}" if n % div == 0 else f"{q:.3g}{suffix}"
    return f"{n:,}"


def goal(x: float) -> str:
    """A target as stated: ``2×``, ``1,000×``."""
    return f"{x:,.0f}×" if float(x) == int(x) else f"{x:g}×"


def counts(values: Iterable[float]) -> str:
    """A range of sizes: ``1M–5M``."""
    vals = sorted({int(v) for v in values})
    return count(vals[0]) if len(vals) == 1 else f"{count(vals[0])}–{count(vals[-1])}"


# ------------------------------------------------------------------ the blocks
def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _row_ck(r: Results) -> list[str]:
    f = "ck_synthetic.json"
    cfg = r.rows(f, "configs")
    big = max(r.col(f, cfg, "n_rows"))
    small = min(r.col(f, cfg, "n_rows"))
    at_big = [c for c in cfg if c["n_rows"] == big]
    at_small = [c for c in cfg if c["n_rows"] == small]
    groups = counts(r.col(f, at_big, "n_groups"))
    return [f"(c,k)-safety curve k = 0..{r.get(f, 'k')}, {count(big)} rows / {groups} groups",
            dur(r.col(f, at_big, "fast_curve_s")),
            f"reference O(\\|B\\|·k²) knapsack "
            f"{times(r.col(f, at_big, 'speedup_reference_over_fast'))} slower "
            f"({times(r.col(f, at_small, 'speedup_reference_over_fast'))} at {count(small)} rows)",
            f"`{f}`"]


def _skyline_k_max(r: Results) -> dict:
    f = "skyline_figure7.json"
    return max(r.rows(f, "c_k"), key=lambda e: e["k"])


def _row_skyline(r: Results) -> list[str]:
    f = "skyline_figure7.json"
    a = r.rows(f, "a_size")
    p = r.rows(f, "a_size")[0]
    kx = _skyline_k_max(r)
    same = ("bit-identical at every point" if r.get(f, "summary", "bit_identical_fraction") == 1
            else f"bit-identical at {r.get(f, 'summary', 'bit_identical_fraction'):.0%} of the "
                 f"points")
    answers = "same answers" if r.get(f, "summary", "all_answers_equal") else "NOT the same answers"
    return [f"SkylineCheck vs Appendix A6 DP, {counts(r.col(f, a, 'rows'))} rows, "
            f"({p['l']},{p['k']},{p['m']})",
            f"end to end (`skyline.check` from a `Release`, Python included): "
            f"{times(r.col(f, a, 'ratio'))} for a repeated (σ, ℓ) "
            f"({dur(r.col(f, a, 'check_s'))} per check; the (σ, ℓ) records are kept on the "
            f"release), {times(r.col(f, a, 'cold_ratio'))} when every call re-finds them; "
            f"{times(r.col(f, a, 'prepared_ratio'))} on prepared inputs; "
            f"k = {kx['k']}: {times(kx['ratio'])} / {times(kx['cold_ratio'])} / "
            f"{times(kx['prepared_ratio'])}",
            f"A6 DP, {answers} ({same})", f"`{f}`"]


def _row_skyline_points(r: Results) -> list[str]:
    f = "skyline_points.json"
    g = lambda key: r.get(f, key)  # noqa: E731
    n_values = round(g("every_value_100_points_pairs") / g("one_sigma_100_points_pairs"))
    one, every = "one_sigma_100_points_", "every_value_100_points_"
    return [f"SkylineCheck, 100 points, {count(g('release')['rows'])} rows",
            f"by classes {dur([g(one + 'classes_sequential_s'), g(one + 'classes_parallel_s')])} "
            f"(one σ), {dur([g(every + 'classes_sequential_s'), g(every + 'classes_parallel_s')])}"
            f" (all {n_values} values); direct group-major scan with the records kept "
            f"{dur([g(one + 'direct_sequential_s'), g(one + 'direct_parallel_s')])} / "
            f"{dur([g(every + 'direct_sequential_s'), g(every + 'direct_parallel_s')])} "
            f"(first call, finding the records: {dur(g(one + 'direct_sequential_first_call_s'))}"
            f" / {dur(g(every + 'direct_sequential_first_call_s'))})",
            "–", f"`{f}`"]


def _row_robustness_adult(r: Results) -> list[str]:
    f = "robustness_adult.json"
    a = r.rows(f, "audits")
    return [f"r-robustness audit, Adult ({len(a)} audits, {len(r.get(f, 'qi'))} QI, "
            f"{span(r.col(f, a, 'attribute_sets'))} attribute sets)",
            f"{dur(r.col(f, a, 'seconds'))} per audit", "–", f"`{f}`"]


def _row_robustness_1m(r: Results) -> list[str]:
    f = "robustness_1m.json"
    a = r.rows(f, "audits")
    return [f"r-robustness audit, {counts(r.col(f, a, 'rows'))} rows, "
            f"{span(r.col(f, a, 'attribute_sets'))} attribute sets, groups of "
            f"{' and '.join(str(s) for s in r.col(f, a, 'group_size'))}",
            dur(r.col(f, a, "seconds")), "–", f"`{f}`"]


def _row_crossover(r: Results) -> list[str]:
    f = "robustness_crossover.json"
    hi = max(r.rows(f, "binary", where=lambda b: 2 * b["n"] == b["N"]), key=lambda b: b["N"])
    once = r.get(f, "crossover_N_by_n", "n=1")
    return [f"exact posterior, group of N = {hi['N']} with the value {hi['n']} times",
            f"ESP recurrence {times(hi['ratio_enumeration_over_esp'])} faster",
            f"possible-world enumeration; it is as fast for a value held once up to "
            f"N ≈ {once}", f"`{f}`"]


def _row_foreground(r: Results) -> list[str]:
    f = "foreground_reproduction.json"
    slow = r.get(f, "slowest_config")
    return ["foreground mining + attack, Adult (every r and QI size of the reproduction)",
            f"≤ {dur(r.get(f, 'slowest_config', 'total_s'))} (slowest: r = {slow['r']}, "
            f"QI {slow['q']}, {slow['n_systems']} systems)",
            f"published: {r.get(f, 'published', 'mining_time').replace('<=', '≤')}", f"`{f}`"]


def _row_batched(r: Results) -> list[str]:
    f = "foreground_batched.json"
    c = r.rows(f, "cases")
    return ["batched Newton over all systems (one thread)",
            times(r.col(f, c, "loop_over_batched_1thread")),
            "one solve per system, same kernel", f"`{f}`"]


def _foundation_big(r: Results) -> dict:
    f = "foundation.json"
    return max(r.rows(f, "sizes"), key=lambda s: s["n_rows"])


def _row_foundation(r: Results) -> list[str]:
    f = "foundation.json"
    s = _foundation_big(r)
    models = r.get(f, "sizes", r.get(f, "sizes").index(s), "models")
    if "k" not in models:
        raise ReadmeDataError(f"benchmarks/results/{f}: no key 'sizes[].models.k'")
    others = [m for name, m in models.items() if name != "k"]
    e2e = r.col(f, models.values(), "fastpriv_end_to_end_s")
    return [f"one classical model from Arrow (`Release.from_table` + metric), "
            f"{count(s['n_rows'])} rows / {count(s['n_groups'])} groups",
            dur(e2e),
            f"pandas per-group loop {times(r.col(f, models.values(), 'ratio_loop_end_to_end'))} "
            f"slower; best vectorised pandas groupby "
            f"{times(r.col(f, others, 'ratio_groupby_end_to_end'))} slower (k-anonymity alone: "
            f"pandas' `groupby().size()` at {times(models['k']['ratio_groupby_end_to_end'])})",
            f"`{f}`"]


def _row_fused(r: Results) -> list[str]:
    f = "foundation.json"
    s = _foundation_big(r)
    for key in ("audit_all_models_s", "ratio_fused_audit", "n_values"):
        if key not in s:
            raise ReadmeDataError(f"benchmarks/results/{f}: no key 'sizes[].{key}'")
    return [f"all nine classical models on a built release, {count(s['n_groups'])} groups × "
            f"{s['n_values']} values",
            f"{dur(s['audit_all_models_s'])} (one fused pass, one loop per group feeding all six "
            f"per-group models, both threads)",
            f"the same models one kernel each: {times(s['ratio_fused_audit'])} slower", f"`{f}`"]


def _scale(r: Results) -> dict[str, Any]:
    """The end-to-end runs by (rows, shape), with per-repeat ratios."""
    f = "scale_end_to_end.json"
    out = {}
    for run in r.rows(f, "runs"):
        reps = r.col(f, [run], "all_repeats")[0]
        scan = r.col(f, reps, "scan_s")
        audit = r.col(f, reps, "audit_s")
        out[(run["n_rows"], run["shape"])] = {
            "run": run, "scan": scan, "audit": audit,
            "ratio": [a / s for a, s in zip(audit, scan, strict=True)],
            "scan_cpu": r.col(f, reps, "scan_cpu_s"), "audit_cpu": r.col(f, reps, "audit_cpu_s"),
            "groups": r.col(f, [run], "audit", "n_groups")[0]}
    return out


def _scale_pick(r: Results) -> tuple[dict, dict, list[dict], float]:
    """(largest few-groups run, largest many-groups run, the smallest runs, ratio goal)."""
    runs = _scale(r)
    big = max(n for n, _ in runs)
    small = min(n for n, _ in runs)
    try:
        few, many = runs[(big, "few_groups")], runs[(big, "many_groups")]
    except KeyError as e:
        raise ReadmeDataError(f"benchmarks/results/scale_end_to_end.json: no run "
                              f"{e.args[0]!r}") from None
    target = r.get("scale_end_to_end.json", "goals", "audit_to_scan_ratio_below")
    return few, many, [v for (n, _), v in runs.items() if n == small], target


def _row_scale(r: Results) -> list[str]:
    f = "scale_end_to_end.json"
    few, many, small, target = _scale_pick(r)
    n = few["run"]["n_rows"]
    rss = max(r.col(f, [few["run"], many["run"]], "peak_rss_gib"))
    met_few = sum(x <= target for x in few["ratio"])
    met_many = sum(x <= target for x in many["ratio"])
    small_n = small[0]["run"]["n_rows"]
    return [f"whole audit (count, classical, (c,k) k ≤ {r.get(f, 'k')}, "
            f"{span(r.col(f, [few['run']], 'audit', 'skyline_points'))} skyline points), "
            f"{count(n)} rows Parquet",
            f"{count(few['groups'])} groups: {dur(few['audit'])}; {count(many['groups'])} groups: "
            f"{dur(many['audit'])}; peak RSS ≤ {rss:.2f} GiB",
            f"bare pyarrow scan of the same two columns, same runs: {dur(few['scan'])} / "
            f"{dur(many['scan'])} — the audit is {times(few['ratio'])} a scan with "
            f"{count(few['groups'])} groups, {times(many['ratio'])} with "
            f"{count(many['groups'])} groups ({len(few['ratio'])} repeats each); "
            f"{times(sum((s['ratio'] for s in small), []))} at {count(small_n)} rows, where the "
            f"scan takes {dur(sum((s['scan'] for s in small), []))} (goal {goal(target)}: met in "
            f"{met_few} of {len(few['ratio'])} repeats with {count(few['groups'])} groups, "
            f"{met_many} of {len(many['ratio'])} with {count(many['groups'])} groups)",
            f"`{f}`"]


def _row_mondrian(r: Results) -> list[str]:
    f = "anonymize_mondrian.json"
    big = max(r.col(f, r.rows(f, "runs"), "n_rows"))
    runs = r.rows(f, "runs", where=lambda x: x["n_rows"] == big)
    crit = "; ".join(r.col(f, runs, "criterion"))
    return [f"Mondrian, {count(big)} rows ({crit})", dur(r.col(f, runs, "seconds")), "–",
            f"`{f}`"]


def _row_lattice(r: Results) -> list[str]:
    f = "anonymize_lattice.json"
    c = r.rows(f, "criteria")
    return [f"lattice search on Adult ({span(r.col(f, c, 'n_nodes'))} nodes, {len(c)} criteria)",
            f"{dur(r.col(f, c, 'search_s'))} per criterion "
            f"({span(r.col(f, c, 'nodes_checked'))} nodes checked)",
            f"exhaustive search {times(r.col(f, c, 'speedup_vs_exhaustive'))}, Arrow round trip "
            f"per node {times(r.col(f, c, 'speedup_vs_arrow_roundtrip'))}", f"`{f}`"]


def _figure8(r: Results) -> tuple[int, list[dict], list[dict]]:
    f = "chen_figure8.json"
    big = max(r.col(f, r.rows(f, "runs"), "rows"))
    tri = r.rows(f, "runs", where=lambda x: x["rows"] == big and x["mode"] == "triples")
    rows = r.rows(f, "runs", where=lambda x: x["rows"] == big and x["mode"] == "rows")
    return big, tri, rows


def _figure8_text(r: Results) -> tuple[str, str]:
    f = "chen_figure8.json"
    big, tri, rows = _figure8(r)
    return (f"{dur(r.col(f, tri, 'total_s'))}, {mib(max(r.col(f, tri, 'peak_rss_mib')))}",
            f"{dur(r.col(f, rows, 'total_s'))}, {mib(max(r.col(f, rows, 'peak_rss_mib')))}")


def _row_figure8(r: Results) -> list[str]:
    big, _, _ = _figure8(r)
    streamed, whole = _figure8_text(r)
    return [f"SkylineAnonymize, {count(big)} rows streamed as triples", streamed,
            f"whole table read: {whole}", "`chen_figure8.json`"]


COLD = [("classic", "cold_start.json", "first_call_without_cache_s", "first_call_with_cache_s"),
        ("ck", "ck_cold_start.json", "no_cache_s", "with_cache_s"),
        ("skyline", "skyline_cold_start.json", "no_cache_s", "cached_s"),
        ("robustness", "robustness_cold_start.json", "no_cache_s", "cached_s"),
        ("foreground", "foreground_cold_start.json", "no_cache_s", "cached_s"),
        ("anonymize", "anonymize_cold_start.json", "no_cache_s", "cached_s")]


def _row_cold(r: Results) -> list[str]:
    parts = [f"{name} {dur(r.get(f, cold))} → {dur(r.get(f, warm))}"
             for name, f, cold, warm in COLD]
    return ["cold start (no cache) → cached, fresh interpreter, one model's workload",
            "; ".join(parts), "–", "`*_cold_start.json`, `cold_start.json`"]


ROWS = [_row_ck, _row_skyline, _row_skyline_points, _row_robustness_adult, _row_robustness_1m,
        _row_crossover, _row_foreground, _row_batched, _row_foundation, _row_fused, _row_scale,
        _row_mondrian, _row_lattice, _row_figure8, _row_cold]


def perf_table(r: Results) -> str:
    """The README's performance table, one row per benchmark."""
    return _table(["what", "measured", "baseline in the same run", "file"],
                  [row(r) for row in ROWS])


def machines(r: Results) -> str:
    """Which machine measured which files (from each file's ``machine`` entry)."""
    for name, block in BLOCKS.items():
        if name != "machines":
            block(r)
    by: dict[str, list[str]] = {}
    for name in sorted(r.used):
        m = r.get(name, "machine")
        key = f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('memory_gib', '?')} GiB"
        by.setdefault(key, []).append(name)
    parts = [f"{key} ({len(files)} files)" for key, files in sorted(by.items())]
    return "Measured on: " + "; ".join(parts) + "."


def help_examples() -> dict[str, list[str]]:
    """Every ``--help`` example of the CLI, by name (``benchmarks.bench_cold_start``'s list)."""
    from benchmarks.bench_cold_start import help_examples as examples

    return examples()


def _command(argv: Sequence[str]) -> str:
    """A command line as its ``--help`` shows it, in backticks (pipes escaped for tables)."""
    import shlex

    from fastpriv.cli import build_parser
    from fastpriv.cli._common import examples_of

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    lines = {tuple(shlex.split(ln)[1:]): ln for p in sub.choices.values()
             for ln in examples_of(p)}
    line = lines.get(tuple(argv), "fastpriv " + shlex.join(argv))
    return "`" + line.replace("|", "\\|") + "`"


def _load(x: Any) -> str:
    """The 1-minute load average of an ``os.getloadavg()`` triple (or a number)."""
    return f"{(x[0] if isinstance(x, (list, tuple)) else x):.1f}"


def measured(r: Results, f: str, how: str = "", *, merged: bool = False) -> str:
    """Under a generated table: file, date, machine and its load while the benchmark ran.

    The file must carry ``machine.date`` and ``load_avg_start`` / ``load_avg_end`` (the
    machine's load average before and after the run, ``os.getloadavg()``). ``merged``:
    also say which rows were measured later, when and at which load (``bench_cold_start
    --merge``).
    """
    m = r.get(f, "machine")
    date = r.get(f, "machine", "date")
    start, end = r.get(f, "load_avg_start"), r.get(f, "load_avg_end")
    when = f"{date[:10]} {date[11:16]} UTC" if len(date) >= 16 else date
    rev = r.load(f).get("revision")          # files written before benchmarks recorded it
    at = f" at revision `{rev}`" if rev else ""
    out = (f"`{f}`{how}: measured {when}{at} on "
           f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores; 1-minute load average "
           f"{_load(start)} before the run, {_load(end)} after.")
    for x in r.load(f).get("merged", []) if merged else ():   # rows added by --merge
        d = x["date"]
        out += (f" {', '.join(x['commands'])}: measured later (`{x['how']}`), "
                f"{d[:10]} {d[11:16]} UTC at revision `{x['revision']}`, load average "
                f"{_load(x['load_avg_start'])} before, {_load(x['load_avg_end'])} after.")
    return out


def _documented(r: Results, f: str) -> dict[str, dict]:
    """The commands of result file ``f``; each must be a current ``--help`` example, each
    example must be there, with the same command line."""
    cmds = r.get(f, "commands")
    examples = help_examples()
    stale = sorted(name for name, c in cmds.items() if examples.get(name) != c.get("argv"))
    missing = sorted(set(examples) - set(cmds))
    if stale or missing:
        raise ReadmeDataError(
            f"benchmarks/results/{f}: commands {stale} are not the current --help examples"
            f"{f' and examples {missing} are not measured' if missing else ''}; rerun "
            f"benchmarks/bench_cold_start.py")
    return cmds


INSTALL = "cold_start_install.json"


def _installed_first(r: Results, name: str) -> str:
    """A documented command's first result on a fresh install (``cold_start_install.json``);
    a command that needs a source checkout says so."""
    c = _documented(r, INSTALL)[name]
    if c.get("needs_checkout"):
        return "needs a source checkout"
    cur = r.col(INSTALL, [c], "current")[0]
    if cur.get("compiled"):
        raise ReadmeDataError(f"benchmarks/results/{INSTALL}: {name} compiled "
                              f"{cur['compiled']} kernels on a fresh install")
    return dur(cur["first_line_s"] if cur.get("first_line_s") is not None else cur["wall_s"])


def cold_commands(r: Results) -> str:
    """Per documented command: the first call on an empty cache, and the next process, next
    to its first result on a fresh install from the wheel."""
    f = "cold_start_commands.json"
    rows = []
    for name, c in _documented(r, f).items():
        cold, warm = r.col(f, [c], "cold")[0], r.col(f, [c], "cached")[0]
        for side, d in (("cold", cold), ("cached", warm)):
            for key in ("wall_s", "first_line_s", "first_output_s", "cpu_s",
                        "compiled_kernels"):
                if d.get(key) is None:
                    raise ReadmeDataError(f"benchmarks/results/{f}: no key "
                                          f"'commands.{name}.{side}.{key}'")
        rows.append([_command(c["argv"]), dur(cold["wall_s"]), dur(cold["first_output_s"]),
                     dur(cold["first_line_s"]), num(cold["cpu_s"]),
                     str(cold["compiled_kernels"]), dur(warm["wall_s"]),
                     _installed_first(r, name)])
    table = _table(["command, as its `--help` shows it", "first call: wall", "first output",
                    "first result line", "CPU-s", "kernels compiled", "next process: wall",
                    "fresh install: first result"], rows)
    return (table + "\n\n" + measured(r, f, " (`python -m benchmarks.bench_cold_start`, "
                                            "one run each)", merged=True)
            + " Fresh install: " + measured(r, INSTALL, _install_how(r), merged=True))


def _install_how(r: Results) -> str:
    rounds = r.get(INSTALL, "rounds")
    return (f" (`python -m benchmarks.bench_cold_start --install {rounds}`: the wheel in a new "
            f"virtual environment, an empty user cache, median of {rounds} fresh processes per "
            f"command)")


def cold_install(r: Results) -> str:
    """Per documented command on a fresh install: first result, wall, CPU-s by phase; the
    wheel; the audit question against DuckDB's and Polars' fresh processes."""
    imports = ("numpy", "numba", "pyarrow", "pandas", "fastpriv", "other")
    rows = []
    for name, c in _documented(r, INSTALL).items():
        cur = r.col(INSTALL, [c], "current")[0]
        ph = cur["phases_s"]
        rows.append([_command(c["argv"]), _installed_first(r, name), dur(cur["wall_s"]),
                     num(cur["cpu_s"]), num(sum(ph[k] for k in imports)),
                     num(ph["kernel_loads"]) + f" ({cur['kernels']})", num(ph["work"]),
                     num(ph["exit"])])
    table = _table(["command, as its `--help` shows it", "first result", "wall", "CPU-s",
                    "imports", "kernel loads (kernels)", "work", "exit"], rows)
    w, peers = r.get(INSTALL, "wheel"), r.get(INSTALL, "peers")
    fp = peers["fastpriv"]
    ratio = {n: fp["wall_s"] / peers[n]["wall_s"] for n in ("duckdb", "polars")}
    text = (f"The wheel ({w['name']}) is {w['size_mb']:.1f} MB with every kernel compiled in; "
            f"installing it takes {dur(w['install_s'])}. Asked the same question in a fresh "
            f"process on the same bundled Adult file (k-anonymity and distinct ℓ-diversity of "
            f"(age, sex) with occupation; all three answer k, ℓ = {fp['answer'].replace(' ', ', ')}"
            f"), the installed fastpriv's Python API takes {dur(fp['wall_s'])} "
            f"({num(fp['cpu_s'])} CPU-s), DuckDB {dur(peers['duckdb']['wall_s'])} and Polars "
            f"{dur(peers['polars']['wall_s'])}: {times(ratio['duckdb'])} DuckDB's and "
            f"{times(ratio['polars'])} Polars' time (median of {fp['runs']} alternated "
            f"processes each).")
    imp = r.get(INSTALL, "commands", "audit", "imports")
    own = imp["own_ms"]
    heavy = sum(v for k, v in own.items() if k in ("numpy", "numba", "llvmlite", "pyarrow"))
    mine = imp["fastpriv_ms"]
    text += (f" Under `python -X importtime`, `fastpriv audit`'s imports take "
             f"{num(imp['total_ms'])} ms: NumPy, Numba with llvmlite and pyarrow "
             f"{num(heavy)} ms, fastpriv's own modules {num(mine)} ms "
             f"({len(imp['fastpriv_modules'])} modules, the kernel modules among them).")
    return table + "\n\n" + text + "\n\n" + measured(r, INSTALL, _install_how(r), merged=True)


def cold_cached(r: Results) -> str:
    """Per documented command: a fresh process on a filled cache, CPU seconds by phase."""
    f = "cold_start_fresh.json"
    imports = ("numpy", "numba", "pyarrow", "pandas", "fastpriv", "other")
    rows = []
    for name, c in _documented(r, f).items():
        cur = r.col(f, [c], "current")[0]
        ph = r.col(f, [cur], "phases_s")[0]
        missing = [k for k in (*imports, "kernel_loads", "work", "exit") if k not in ph]
        if missing:
            raise ReadmeDataError(f"benchmarks/results/{f}: no key "
                                  f"'commands.{name}.current.phases_s.{missing[0]}'")
        loads = num(ph["kernel_loads"]) + (f" ({cur['kernels']})" if cur.get("kernels") else "")
        if cur.get("compiled"):
            loads += f", {cur['compiled']} compiled"
        rows.append([_command(c["argv"]), dur(cur["wall_s"]), num(cur["cpu_s"]),
                     num(sum(ph[k] for k in imports)), loads, num(ph["work"]),
                     num(ph["exit"])])
    table = _table(["command, as its `--help` shows it", "wall", "CPU-s", "imports",
                    "kernel loads (kernels)", "work", "exit"], rows)
    how = (f" (`python -m benchmarks.bench_cold_start --fresh {r.get(f, 'rounds')}`, median "
           f"of {r.get(f, 'rounds')} fresh processes per command; phases in CPU seconds)")
    return table + "\n\n" + measured(r, f, how, merged=True)


def compile_profile(r: Results) -> str:
    """Where a cold warm-up's compile time goes, and ``warmup --jobs 2`` against one process."""
    f = "cold_start_commands.json"
    w = r.get(f, "warmup_cold")
    ph = r.get(f, "warmup_cold", "compile_phases_s")
    total = sum(ph.values())
    one, two = r.get(f, "warmup_fill", "jobs_1"), r.get(f, "warmup_fill", "jobs_2")
    return (f"A cold `fastpriv warmup` compiles {w['compiled_kernels']} kernels in "
            f"{num(w['cpu_s'])} CPU-s ({dur(w['wall_s'])} wall); LLVM (optimisation and machine "
            f"code, including callees "
            f"that Numba links into each caller and compiles again there) takes "
            f"{ph['llvm'] / total:.0%} of the compile time, lowering {ph['lowering'] / total:.0%}"
            f", typing and the other Numba passes the rest (per kernel and per phase: "
            f"`cold_start_kernels` in `{f}`). Filling an empty cache, `fastpriv warmup` takes "
            f"{dur(one['wall_s'])} wall and {num(one['cpu_s'])} CPU-s, and `fastpriv warmup "
            f"--jobs 2`, which warms the models in two processes sharing the cache, "
            f"{dur(two['wall_s'])} wall and {num(two['cpu_s'])} CPU-s (kernels both need "
            f"compile in each; it saves wall time only while the second core is free). "
            + measured(r, f, "").replace(": measured", " was measured", 1))


def portable_kernels(r: Results) -> str:
    """The package's portable kernels against kernels compiled for the measuring CPU."""
    f = "portable_kernels.json"
    ops = r.get(f, "operations")
    ratio = r.get(f, "ratio_to_host")

    def x(v: float) -> str:                     # ratios near 1: two decimals
        return f"{float(v):.2f}×"

    rows = [[desc, x(r.get(f, "ratio_to_host", "generic", k)),
             x(r.get(f, "ratio_to_host", "x86-64-v3", k))] for k, desc in ops.items()]
    worst = max(ratio["generic"].values())
    table = _table(["hot path (inputs of about a million rows; Adult for the last two)",
                    "baseline x86-64 / host", "x86-64-v3 / host"], rows)
    verdicts, answers = r.get(f, "same_verdicts"), r.get(f, "same_answers")
    if not all(verdicts.values()):
        raise ReadmeDataError(f"benchmarks/results/{f}: the variants' verdicts differ for "
                              f"{[k for k, same in verdicts.items() if not same]}")
    differ = [ops[k] for k, same in answers.items() if not same]
    slower = (f"at most {(worst - 1) * 100:.0f} % slower than" if worst > 1 else
              "never slower than")
    verdict = ("within the 10 % that a second target would have to win back, so wheels ship "
               "it alone" if worst <= 1.10 else "more than the 10 % that makes a second "
               "target worth shipping: ship x86-64-v3 too")
    agree = ("Every variant gave the same verdict (value, parameters, witness) on every hot "
             "path" + ("" if not differ else
                       f", and the same whole result except for {'; '.join(differ)} (its "
                       f"floating-point noise and ties differ between code with FMA and "
                       f"without, as for a JIT on a CPU without FMA: the benchmark's "
                       f"docstring)") + ". ")
    return (table + f"\n\nCPU time of each hot path with the package's kernels, as a multiple "
            f"of its time with kernels compiled for the measuring CPU (the median over "
            f"{r.get(f, 'rounds')} rounds of alternated fresh processes of each round's "
            f"ratio, each process the best of {r.get(f, 'repeat')} calls). Baseline x86-64 "
            f"code is {slower} the host's own, {verdict}. " + agree
            + measured(r, f, " (`python -m benchmarks.bench_portable_kernels`)"))


def test_suite(r: Results) -> str:
    """The suite's wall time cold and warm, and the developer loop (``-m "not slow"``)."""
    f = "test_suite.json"
    runs = r.get(f, "runs")
    cold, warm, fast = runs["cold"], runs["warm"], runs["warm_fast"]

    def when(run: dict) -> str:
        return str(run.get("date", "undated"))[:10]

    return (f"The whole suite ({cold['summary'].split(',')[0]}) takes {dur(cold['wall_s'])} "
            f"with an empty kernel cache, as on a fresh CI machine (measured {when(cold)}); "
            f"warm, {dur(warm['wall_s'])} ({warm['summary'].split(',')[0]}, measured "
            f"{when(warm)}); `python -m pytest -q -m \"not slow\"` leaves out the tests marked "
            f"slow (fresh interpreters, Spark, whole reproductions) and takes "
            f"{dur(fast['wall_s'])} warm ({fast['summary'].split(',')[0]}, measured "
            f"{when(fast)}; `{f}`, `python -m benchmarks.suite_time`; each run is dated because "
            f"`--only` re-measures one of them).")


def not_paid(r: Results) -> str:
    """What did not pay: threads on the counting kernels, Dask on one machine."""
    f = "scale_threads.json"
    k = r.rows(f, "kernels")
    counting = [x for x in k if x.get("kernel", "").startswith("count_pairs")]
    owner = [x for x in k if x.get("kernel", "").startswith("dense_add")]
    if not counting or not owner:
        raise ReadmeDataError(f"benchmarks/results/{f}: no 'count_pairs*' or 'dense_add*' "
                              f"entry in 'kernels'")
    sp = r.col(f, counting, "speedup_best") + r.col(f, counting, "speedup_median")
    ow = r.col(f, owner, "speedup_best") + r.col(f, owner, "speedup_median")
    d = "scale_dask.json"
    same = "identical results" if r.get(d, "identical") else "results NOT identical"
    return (f"What did **not** pay, measured: two threads on two shared cores give {times(sp)} "
            f"on the counting kernels, and the owner-computes parallel dense count runs at "
            f"{times(ow)} of the one-thread uint8 count's speed (`scale_threads.json`); Dask on "
            f"one machine is {times(r.get(d, 'ratio_dask_to_single_best'))} slower than a "
            f"single process ({same}, `scale_dask.json`) — use it for data spread over "
            f"machines, not for speed.")


#: the README's name of every contestant of ``engines.json``, in the table's order
ENGINE_PATHS = {
    "memory_batches": "in memory: `Release.from_batches(folder)`",
    "memory_table": "in memory: `Release.from_table(read_table(folder))`",
    "spark_groupby": "Spark: `fastpriv.spark`, `method=\"groupby\"`",
    "spark_partitions": "Spark: `fastpriv.spark`, `method=\"partitions\"`",
    "spark_fold": "Spark: fold `fastpriv.spark.audit(q=None)`",
    "spark_sql": "Spark: hand-written `spark.sql`",
    "dask": "Dask: `fastpriv.distributed`",
    "dask_fold": "Dask: fold `groupwise_audit(partition_by_group=True, q=None)`",
    "dask_buckets": "Dask: fold `groupwise_audit(split_out=8, q=None)`",
    "dask_hand": "Dask: hand-written `dd` groupby",
    "duckdb": "DuckDB: `fastpriv.pushdown`",
    "duckdb_fold": "DuckDB: fold `fastpriv.pushdown.audit(q=None)`",
    "duckdb_one": "DuckDB: fold `pushdown.audit(split_out=1, q=None)`",
    "duckdb_capped": "DuckDB: fold `split_out=1`, DuckDB's `memory_limit` 500MB",
    "duckdb_sql": "DuckDB: hand-written SQL",
}
#: the fold contestants (only summaries reach the driver) and issue 49's targets for them
ENGINE_FOLDS = ("spark_fold", "dask_fold", "dask_buckets", "duckdb_fold", "duckdb_one",
                "duckdb_capped")
FOLD_DRIVER_MIB = 1024      # driver peak at the largest number of groups, at most
FOLD_TO_HAND = 1.0          # time against the same engine's hand-written code, at most
FOLD_FLAT = 1.1             # "flat": driver peak at the most groups / at the fewest, at most


def engines(r: Results) -> str:
    """Per engine path and number of groups: seconds, ratios, peak memory (engines.json)."""
    f = "engines.json"
    sets = r.get(f, "datasets")
    ref, hand_of = r.get(f, "reference"), r.get(f, "hand_of")
    unknown = sorted(set(r.get(f, "contestants")) - set(ENGINE_PATHS))
    if unknown:
        raise ReadmeDataError(f"benchmarks/results/{f}: contestants {unknown} have no README "
                              f"name (ENGINE_PATHS in benchmarks/readme_tables.py)")
    failed = r.get(f, "failed")
    gone = {(int(x["groups"]), x["contestant"]) for x in failed}   # not retried
    skipped = [x for x in r.get(f, "skipped") if (int(x["groups"]), x["contestant"]) not in gone]
    missing = {(int(x["groups"]), x["contestant"]): "skipped: " + x["reason"] for x in skipped}

    def cause(x: dict) -> str:
        c = x.get("cause") or x["error"]
        return "the JVM ran out of heap (OutOfMemoryError)" if "OutOfMemoryError" in c else c

    missing.update({(int(x["groups"]), x["contestant"]):
                    f"failed after {x['process_wall_s']:.0f} s: {cause(x)}" for x in failed})

    def peak(c: dict, key: str) -> str:
        return "—" if c.get(key) is None else f"{c[key]:,.0f}"

    rows, fastest, rounds = [], True, r.get(f, "rounds")
    for g, d in sets.items():
        cs = d["contestants"]
        for name, label in ENGINE_PATHS.items():
            if name not in cs:
                why = missing.get((int(g), name), "no run")
                rows.append([label, count(int(g)), f"not measured ({why})"] + ["—"] * 5)
                continue
            c = cs[name]
            if name in hand_of and name not in hand_of.values() and c["ratio_to_memory"] < 1:
                fastest = False    # a fastpriv engine path beat the in-memory one
            hand = ("—" if name not in hand_of or hand_of[name] == name
                    else times(c["ratio_to_hand"]))
            n = c.get("rounds", rounds)
            of = "" if n == rounds else f" ({n} round{'s' if n > 1 else ''})"
            rows.append([label, count(int(g)), f"{num(c['min_s'])} / {num(c['median_s'])}{of}",
                         "—" if name == ref else times(c["ratio_to_memory"]), hand,
                         peak(c, "driver_peak_mib"), peak(c, "jvm_peak_mib"),
                         peak(c, "workers_peak_mib")])
    lead = (f"From Parquet to k and distinct ℓ, {count(r.get(f, 'n_rows'))} rows in "
            f"{r.get(f, 'files')} files, on one {r.get(f, 'cores')}-core machine (min / median "
            f"of {rounds} rounds, each path in a fresh process per round; × in-memory: against "
            f"`Release.from_batches`; × hand: against the same engine's own SQL / dataframe "
            f"code for k and ℓ; peak resident memory of the driver process, of Spark's JVM "
            f"(default driver memory) and of the other processes — Dask workers, Spark's "
            f"Python workers). The folds (`fastpriv.spark.audit`, "
            f"`fastpriv.distributed.groupwise_audit`, `fastpriv.pushdown.audit`, all with "
            f"`q=None`: k and ℓ need no pass for the table's distribution) bring one summary "
            f"per partition to the driver instead of every (group, value) pair; DuckDB runs "
            f"in the driver, and `pushdown.audit` counts its groups in buckets of about "
            f"{PAIRS_PER_BUCKET:,} (group, value) pairs (`split_out=\"auto\"`; "
            f"`split_out=1`: one query). Every "
            f"release equals the in-memory one and every k and ℓ agrees. "
            + ("In memory is faster than every engine path" if fastest else
               "An engine path is faster than in memory somewhere")
            + ": the point of the other paths is that the heavy part runs where the data "
              "lives."
            + (" Failed, so not in the timings: " + "; ".join(
                f"{ENGINE_PATHS[x['contestant']]} at {count(int(x['groups']))} "
                f"groups" for x in failed) + "." if failed else "")
            + (f" {len(skipped)} run{'s' if len(skipped) > 1 else ''} did not start within "
               f"the run's {num(r.get(f, 'time_budget_min'))}-minute budget (`skipped` in the "
               f"JSON)."
               if skipped else ""))
    table = _table(["path", "groups", "seconds", "× in-memory", "× hand", "driver MiB",
                    "JVM MiB", "workers MiB"], rows)
    how = (" (`python -m benchmarks.bench_engines`; other processes shared the machine, so "
           "the minimum is the better estimate of each path's cost)")
    again = "".join(
        f" Re-measured after a change to those paths (`python -m benchmarks.bench_engines "
        f"--remeasure {','.join(x['contestants'])} --groups "
        f"{','.join(str(g) for g in x['groups'])} --rounds {x['rounds']}`): "
        f"{', '.join(ENGINE_PATHS[n] for n in x['contestants'])} at "
        f"{', '.join(count(g) for g in x['groups'])} groups, {x['date'][:10]} "
        f"{x['date'][11:16]} UTC at revision `{x['revision']}`, load average "
        f"{_load(x['load_avg_start'])} before, {_load(x['load_avg_end'])} after."
        for x in r.load(f).get("remeasured", []))
    return (textwrap.fill(lead, WIDTH, break_long_words=False, break_on_hyphens=False)
            + "\n\n" + table + "\n\n"
            + textwrap.fill(measured(r, f, how) + again, WIDTH, break_long_words=False,
                            break_on_hyphens=False)
            + ("\n\n" + textwrap.fill(_fold_targets(r), WIDTH, break_long_words=False,
                                       break_on_hyphens=False)
               if any(n in d["contestants"] for d in sets.values() for n in ENGINE_FOLDS)
               else ""))


def _fold_targets(r: Results) -> str:
    """Issue 49's targets for the folds, each as met or missed, from engines.json."""
    f = "engines.json"
    sets = {int(g): d["contestants"] for g, d in r.get(f, "datasets").items()}
    hand_of = r.get(f, "hand_of")
    out = []
    for name in ENGINE_FOLDS:
        have = {g: cs[name] for g, cs in sets.items() if name in cs}
        if not have:
            continue
        lo, hi = min(have), max(have)
        peak_lo, peak_hi = have[lo]["driver_peak_mib"], have[hi]["driver_peak_mib"]
        ratios = [c["ratio_to_hand"] for c in have.values() if c.get("ratio_to_hand")]
        mem_ok = peak_hi <= FOLD_DRIVER_MIB and peak_hi <= FOLD_FLAT * peak_lo
        slow = [count(g) for g, c in sorted(have.items())
                if c.get("ratio_to_hand") and c["ratio_to_hand"] > FOLD_TO_HAND]
        peaks = ", ".join(f"{num(c['driver_peak_mib'])} MiB at {count(g)}"
                          for g, c in sorted(have.items()))
        out.append(
            f"{ENGINE_PATHS[name]}: driver peak {peaks} groups ({num(peak_hi / peak_lo)}× "
            f"from {count(lo)} to {count(hi)}: "
            + ("met" if mem_ok else "missed")
            + (f"; the hand-written code's driver: {num(h['driver_peak_mib'])} MiB"
               if (h := sets[hi].get(hand_of[name])) else "")
            + f"); {times(ratios)} the time of "
            f"{ENGINE_PATHS[hand_of[name]]} ("
            + ("met" if not slow else f"missed at {', '.join(slow)} groups") + ")")
    return (f"Targets for the folds (issue 49): driver peak flat in the number of groups (at "
            f"most {goal(FOLD_FLAT)} from the fewest to the most groups) and at most "
            f"{FOLD_DRIVER_MIB:,} MiB at the most, time at most "
            f"{goal(FOLD_TO_HAND)} the same engine's hand-written code. As measured: "
            + "; ".join(out) + ".")


def engines_large(r: Results) -> str:
    """The engines' runs on one larger data set (engines.json ``large``)."""
    f = "engines.json"
    hand_of = r.get(f, "hand_of")
    parts = []
    for x in r.rows(f, "large"):
        cs = x["contestants"]
        rows = []
        for name, label in ENGINE_PATHS.items():
            if name not in x["contestants_run"]:
                continue
            if name not in cs:
                why = [y for y in x["failed"] if y["contestant"] == name]
                rows.append([label, "not measured (" + (
                    f"failed after {why[0]['process_wall_s']:.0f} s: "
                    f"{why[0].get('cause') or why[0]['error']}" if why else "skipped")
                    + ")"] + ["—"] * 4)
                continue
            c = cs[name]
            hand = "—" if hand_of.get(name, name) == name else times(c["ratio_to_hand"])
            peak = ["—" if c.get(k) is None else f"{c[k]:,.0f}"
                    for k in ("driver_peak_mib", "jvm_peak_mib", "workers_peak_mib")]
            rows.append([label, f"{num(c['min_s'])}", hand] + peak)
        n = x["rounds"]
        d = x["date"]
        parts.append(
            textwrap.fill(
                f"Larger: {count(x['n_rows'])} rows, {count(x['n_groups'])} groups "
                f"({count(x['n_pairs'])} (group, value) pairs, k = {x['k']}, ℓ = {x['l']}), "
                f"{n} round{'s' if n > 1 else ''} per path, each in a fresh process "
                f"(`python -m benchmarks.bench_engines --remeasure "
                f"{','.join(x['contestants_run'])} --large {x['n_rows']},{x['n_groups']} "
                f"--rounds {n}`; {d[:10]} {d[11:16]} UTC at revision `{x['revision']}`, "
                f"1-minute load average {_load(x['load_avg_start'])} before, "
                f"{_load(x['load_avg_end'])} after). Every k and ℓ equals "
                f"`Release.from_batches`'.", WIDTH, break_long_words=False,
                break_on_hyphens=False)
            + "\n\n" + _table(["path", "seconds", "× hand", "driver MiB", "JVM MiB",
                                "workers MiB"], rows))
    return "\n\n".join(parts)


def engines_projection(r: Results) -> str:
    """A projection (not a measurement) of the folds to 1B rows / 100M groups."""
    f = "engines.json"
    p = r.get(f, "projection")
    if p.get("is_measurement") is not False:
        raise ReadmeDataError(f"benchmarks/results/{f}: projection.is_measurement must be "
                              f"false")
    t = p["target"]
    ns = t["executors"]
    rows = []
    every = [x for c in p["contestants"].values() for x in c["points"]]
    top_rows = max(x["n_rows"] for x in every)
    top_groups = max(x["n_groups"] for x in every)
    for name, c in p["contestants"].items():
        pts = c["points"]
        rows.append([ENGINE_PATHS[name],
                     f"{c['fixed_s']:.3g} s + {c['s_per_row'] * 1e9:.3g} ns/row + "
                     f"{c['s_per_group'] * 1e9:.3g} ns/group",
                     f"{len(pts)} ({counts(x['n_groups'] for x in pts)} groups), "
                     f"≤ {c['max_rel_residual'] * 100:.0f}%",
                     f"{num(c['driver_mib_intercept'])} {c['driver_mib_per_million_groups']:+.2g}"
                     f"/M groups"]
                    + [f"{num(c['projected'][str(n)]['seconds'])} s" for n in ns]
                    + [f"{num(c['projected'][str(ns[0])]['driver_mib'])}"])
    big = (f"{t['n_rows'] / 1e9:g}B" if t["n_rows"] >= 1e9 else count(t["n_rows"]))
    lead = (f"**Projection, not a measurement**: {big} rows, "
            f"{count(t['n_groups'])} groups on N executors, from the minima measured above "
            f"on this 2-core machine (2 local executors / workers; `python -m "
            f"benchmarks.bench_engines --project {','.join(p['contestants'])}`). Each path's "
            f"seconds are fitted as T = a + b·rows + c·groups (non-negative least squares "
            f"over every measured size), the driver's peak as d + e·groups; the projection "
            f"is T = a + (b·rows + c·groups) / N, i.e. the part that runs next to the data "
            f"scales perfectly with N executors like these and the driver's fixed cost does "
            f"not. The driver merges one summary per partition: "
            f"{dur(p['summary']['s_per_summary'])} and {p['summary']['bytes_per_summary']:,} "
            f"bytes each (measured: unpickle and merge), so even 100,000 partitions add "
            f"{dur(p['summary']['s_per_summary'] * 1e5)} and "
            f"{num(p['summary']['bytes_per_summary'] * 1e5 / 2**20)} MiB received. DuckDB "
            f"is left out: it runs in one process, the driver's, whose memory is the "
            f"engine's (see the DuckDB rows above). It ignores the network (a local shuffle "
            f"is memory to memory), stragglers "
            f"and skew, and extrapolates {num(t['n_rows'] / top_rows)}× beyond the most rows "
            f"and {num(t['n_groups'] / top_groups)}× beyond the most groups measured; the "
            f"residual column says how well the line fits what was measured.")
    table = _table(["path", "fit: T = a + b·rows + c·groups", "sizes fitted, max residual",
                    "driver MiB fit"]
                   + [f"N = {n}" + (" (this machine)" if n == 1 else "") for n in ns]
                   + ["driver MiB at target"], rows)
    return (textwrap.fill(lead, WIDTH, break_long_words=False, break_on_hyphens=False)
            + "\n\n" + table)


def threads_limit(r: Results) -> str:
    """Known limitation: threads on two shared cores."""
    f = "scale_threads.json"
    k = r.rows(f, "kernels")
    control = [x for x in k if x.get("kernel", "").startswith("control")]
    work = [x for x in k if not x.get("kernel", "").startswith("control")]
    if not control:
        raise ReadmeDataError(f"benchmarks/results/{f}: no 'control' entry in 'kernels'")
    return (f"Two threads on {r.get(f, 'pool_size')} shared cores give "
            f"{times(r.col(f, work, 'speedup_median'))} (median of {r.get(f, 'repeats')} "
            f"alternated repeats) on the kernels, a pure compute loop "
            f"{times(r.col(f, control, 'speedup_median'))} at the same time: the kernels are "
            f"memory bound (`scale_threads.json`).")


def skyline_limit(r: Results) -> str:
    """Known limitation: SkylineCheck vs the A6 DP when the records must be found."""
    f = "skyline_figure7.json"
    a = r.rows(f, "a_size")
    kx = _skyline_k_max(r)
    target, target_k = r.get(f, "goals", "ratio_10_10_10"), r.get(f, "goals", "ratio_k32")
    met = r.get(f, "summary", "goal_10_10_10_met", "end_to_end") and \
        r.get(f, "summary", "goal_k32_met", "end_to_end")
    p = a[0]
    return (f"SkylineCheck vs the A6 dynamic program, end to end: the {goal(target)} / "
            f"{goal(target_k)} goal is {'met' if met else 'not met'} for a *repeated* (σ, ℓ) — "
            f"the check then reads the (σ, ℓ) records kept on the release, and a call is "
            f"{dur(r.col(f, a, 'check_s'))}, mostly Python. A check that must first find the "
            f"records (one pass over the groups holding σ) is {times(r.col(f, a, 'cold_ratio'))} "
            f"at ({p['l']},{p['k']},{p['m']}) and {times(kx['cold_ratio'])} at k = {kx['k']}; "
            f"the very first check on a fresh release also builds the occurrence index and "
            f"is slower still (not quoted: `first_check_ratio` in `{f}` predates the current "
            f"index build).")


def scale_limit(r: Results) -> str:
    """Known limitation: a whole audit vs a bare scan of the same Parquet columns."""
    f = "scale_end_to_end.json"
    few, many, small, target = _scale_pick(r)
    phases = r.col(f, [many["run"]], "audit", "phases_s")[0]
    after = {k: v for k, v in phases.items() if k != "count"}
    if not after:
        raise ReadmeDataError(f"benchmarks/results/{f}: 'runs[].audit.phases_s' has no phase "
                              f"besides 'count'")
    total = sum(after.values())
    scan = min(many["scan"])
    longer = ("they alone take longer than the scan, so no faster count brings that shape "
              f"to {goal(target)}" if total > scan else
              "they take less than the scan, so a faster count could bring that shape closer "
              f"to {goal(target)}")
    small_ratio = sum((s["ratio"] for s in small), [])
    return (f"A whole audit of a {count(few['run']['n_rows'])}-row Parquet file costs "
            f"{times(few['ratio'])} a bare scan of its columns with {count(few['groups'])} large "
            f"groups (goal {goal(target)}: met in {sum(x <= target for x in few['ratio'])} of "
            f"{len(few['ratio'])} repeats), but {times(many['ratio'])} with "
            f"{count(many['groups'])} small ones, and {times(small_ratio)} at "
            f"{count(small[0]['run']['n_rows'])} rows, where the scan takes "
            f"{dur(sum((s['scan'] for s in small), []))} and the machine's noise decides. The "
            f"count is near the bound of two cores: the scan keeps both busy "
            f"({span(few['scan_cpu'])} CPU-s), counting decodes the same columns on one thread "
            f"while the other counts ({span(few['audit_cpu'])} CPU-s of audit, `audit_cpu_s`). "
            f"With {count(many['groups'])} groups, building the release and each model are "
            f"separate passes over the groups × values profile ({dur(list(after.values()))} "
            f"each, {dur(total)} together, `phases_s` in `scale_end_to_end.json`): {longer}. "
            f"They are mostly compute (the per-group sort of the profile build, the models' "
            f"per-value arithmetic) rather than memory traffic. Reaching {goal(target)} there "
            f"needs one fused pass per group that builds the profile and feeds every model at "
            f"once; that is not built.")


def _peer_goal(r: Results, shapes: list[dict], f: str = "peers.json") -> str:
    """Which ingest shapes meet the goal (≤ 1/3 of DuckDB and Polars, ≤ 2× the read)."""
    def name(s: dict) -> str:
        kind = {"qi": "3-QI", "int": "int", "string": "string"}.get(s["kind"], s["kind"])
        return f"{count(s['groups_requested'])} {kind}"

    ok, miss = [], []
    for s, rt in zip(shapes, r.col(f, shapes, "ratios_min"), strict=True):
        good = (rt["fastpriv/duckdb"] <= 1 / 3 and rt["fastpriv/polars"] <= 1 / 3
                and rt["fastpriv/pyarrow_read"] <= 2)
        (ok if good else miss).append(name(s))
    return (f"on {len(ok)} of {len(shapes)} shapes ({', '.join(ok) or 'none'}; missed: "
            f"{', '.join(miss) or 'none'})")


_PHASE = {   # release_profile phase names (benchmarks/bench_peers.py) the README cites
    "decoder": "  of which waiting for the reader thread (Parquet decode)",
    "steal": "  of which decoding on the calling thread (first row group, stolen ones)",
    "count": "  of which counting (dense_add kernels; large states on the counter thread)",
    "strmap": "    of which exact string hash map (str_map, str_map_records kernels)",
    "profile": "profile build (_Scan.profile)",
    "total": "total",
}


def _phase(r: Results, shapes: list[dict], key: str) -> list[float]:
    """One phase of the profiled release build of each shape (seconds)."""
    return [x[_PHASE[key]] for x in r.col("peers.json", shapes, "release_profile", "phases_s")]


def _peers_large(r: Results) -> str:
    """The same comparison on the larger files of ``peers_100m.json`` (one sentence)."""
    f = "peers_100m.json"
    shapes = r.rows(f, "shapes")
    groups = sorted({int(g) for g in r.col(f, shapes, "groups_requested")})

    def ratio(key: str) -> str:
        parts = []
        for g in groups:
            sel = [s for s in shapes if s["groups_requested"] == g]
            parts.append(f"{times([x[key] for x in r.col(f, sel, 'ratios_min')])} with "
                         f"{count(g)}")
        return ", ".join(parts)

    return (f" At {count(shapes[0]['rows'])} rows (`peers_100m.json`, same method) it is "
            f"{ratio('fastpriv/duckdb')} groups against DuckDB, {ratio('fastpriv/polars')} "
            f"against Polars and {ratio('fastpriv/pyarrow_read')} against the read (which "
            f"there materializes every row); the goal is met {_peer_goal(r, shapes, f)}.")


def peers_first_call(r: Results) -> str:
    """Known limitation: a first call in a fresh process against DuckDB's and Polars'."""
    f = "peers_first_call.json"
    shapes = r.rows(f, "shapes")
    kinds = {"qi": "3-QI", "int": "int", "string": "string"}

    def name(s: dict) -> str:
        return f"{count(s['rows'])}/{count(s['groups_requested'])} {kinds.get(s['kind'])}"

    sizes = sorted({int(s["rows"]) for s in shapes})
    per_size = "; ".join(
        f"{times([x['fastpriv/duckdb']['median_wall'] for x in r.col(f, sel, 'ratios')])} "
        f"DuckDB's and "
        f"{times([x['fastpriv/polars']['median_wall'] for x in r.col(f, sel, 'ratios')])} "
        f"Polars' at {count(n)} rows"
        for n in sizes for sel in [[s for s in shapes if int(s["rows"]) == n]])
    ahead = [s for s in shapes if s["ratios"]["fastpriv/duckdb"]["median_wall"] < 1]
    behind = [name(s) for s in shapes if s not in ahead]
    small = [s for s in shapes if int(s["rows"]) == sizes[0]]
    ph = [r.col(f, [s], "fastpriv_cpu_phases")[0]["phases_s"] for s in small]
    fixed = {k: statistics.median(p[k] for p in ph) for k in ph[0]}
    imports = sum(fixed[k] for k in ("numpy", "numba", "pyarrow", "pandas", "fastpriv",
                                      "other"))
    duck = statistics.median(c for s in small for c in s["fresh"]["duckdb"]["cpu_s"])
    return (f"First calls (`peers_first_call.json`, `python -m benchmarks.bench_peers "
            f"first-call`): each contestant a fresh process that imports its library and "
            f"makes one call on the file (fastpriv's kernel cache filled), median of "
            f"{r.get(f, 'rounds')} alternated rounds, spawn to exit: fastpriv's whole process "
            f"takes {per_size}. It is ahead of DuckDB's fresh process on {len(ahead)} of "
            f"{len(shapes)} shapes (behind: {', '.join(behind) or 'none'}): at "
            f"{count(sizes[0])} rows a fresh fastpriv process spends {num(imports)} CPU-s "
            f"importing (NumPy, Numba, pyarrow, the rest), {num(fixed['kernel_loads'])} "
            f"loading its cached kernels and {num(fixed['exit'])} exiting, against "
            f"{num(duck)} CPU-s for DuckDB's whole process. " + measured(r, f)
            + "".join(f" Shapes not measured again come from `{x['command']}` at revision "
                      f"`{x['revision']}` ({x['date'][:10]} {x['date'][11:16]} UTC, load "
                      f"{_load(x['load_avg_start'])} before, {_load(x['load_avg_end'])} after)."
                      for x in r.load(f).get("earlier_runs", [])))


def peers_limit(r: Results) -> str:
    """Known limitation: ingest against DuckDB and Polars, and where its time goes."""
    f = "peers.json"
    shapes = r.rows(f, "shapes")
    groups = sorted({int(g) for g in r.col(f, shapes, "groups_requested")})
    lo, mid = groups[0], groups[min(1, len(groups) - 1)]
    few = [s for s in shapes if s["groups_requested"] == lo]
    many = [s for s in shapes if s["groups_requested"] == mid]
    strings = [s for s in many if s["kind"] == "string"]

    def ratio(g: int | None, key: str) -> list[float]:
        sel = [s for s in shapes if g is None or s["groups_requested"] == g]
        return [x[key] for x in r.col(f, sel, "ratios_min")]

    per_groups = ", ".join(f"{times(ratio(g, 'fastpriv/duckdb'))} with {count(g)}"
                           for g in groups)
    per_read = ", ".join(f"{times(ratio(g, 'fastpriv/pyarrow_read'))} with {count(g)}"
                         for g in groups)
    audit = r.col(f, shapes, "fastpriv_parts_min_s", "audit_s")
    m = "peers_memory.json"
    mem = r.rows(m, "shapes")
    memory = []
    for g in sorted({x["groups_requested"] for x in mem}):
        sel = [x for x in mem if x["groups_requested"] == g]
        growth = [x / 1024 for x in r.col(m, sel, "growth_mib")]
        beyond = ", ".join(f"{num(x['beyond_release_mib'] / 1024)} GiB with {x['kind']} keys"
                           for x in sel)
        memory.append(f"{span(growth, num)} GiB with {count(g)} groups (beyond the release "
                      f"itself: {beyond})")
    top = ""
    if len(groups) > 2:
        hi = groups[-1]
        top = (f" With {count(hi)} groups requested (as many ids as rows: about 63 % of them "
               f"distinct) the count matrix still holds a byte per cell; there it is "
               f"{times(ratio(hi, 'fastpriv/duckdb'))} DuckDB's and "
               f"{times(ratio(hi, 'fastpriv/polars'))} Polars' time, string keys the slowest "
               f"(a string table of millions of keys).")
    return (f"Ingest against DuckDB and Polars (`benchmarks/bench_peers.py`, `peers.json`, "
            f"minimum of alternated rounds in fresh processes, {count(shapes[0]['rows'])} "
            f"rows): the same k, ℓ, entropy ℓ and t from one Parquet file; "
            f"`Release.from_table` + `classic.audit` is, against DuckDB's time, {per_groups} "
            f"groups; {times(ratio(None, 'fastpriv/polars'))} Polars'; and against a bare read "
            f"of the columns {per_read}. The goal, 3× ahead of both and within 2× of the read, "
            f"is met {_peer_goal(r, shapes)}. Where the time goes (`release_profile`, one "
            f"profiled build per shape): with {count(lo)} groups one thread decodes the row "
            f"groups while the other encodes and counts (and decodes the next row group "
            f"itself when it would wait: {dur(_phase(r, few, 'steal'))}, the first row group's "
            f"columns split between both), and the build waits on the decoder for "
            f"{dur(_phase(r, few, 'decoder'))} of {dur(_phase(r, few, 'total'))}: decoding and "
            f"counting share the two cores. With {count(mid)} groups the count matrix and the key "
            f"maps are far larger than the caches: counting takes "
            f"{dur(_phase(r, many, 'count'))} (partitioned into L2-sized slices, on a thread "
            f"of its own while the next batch's keys are encoded), sorting the "
            f"{count(mid)} profiles {dur(_phase(r, many, 'profile'))}, and string keys "
            f"{dur(_phase(r, strings, 'strmap'))} in the exact string map (probes bucketed "
            f"and prefetched; their hashing runs on a worker thread ahead) — each a random "
            f"access per row into tens of MB where the read streams, so those shapes stay "
            f"several times the read.{top}{_peers_large(r)} The audit takes ≤ "
            f"{dur(max(audit))}. At "
            f"{count(mem[0]['rows'])} rows peak memory grows by {'; by '.join(memory)} "
            f"(`peers_memory.json`).")


def lattice_scale(r: Results) -> str:
    """Minimal generalizations at scale: IHIS shape and Adult, beside ARX's published times."""
    f = "lattice_scale.json"

    def runs(ds: str, side: str) -> dict[float, dict]:
        return {x["suppression"]: x for x in r.rows(f, "datasets", ds, side, "runs")}

    ihis, adult = runs("ihis", "current"), runs("adult", "current")
    base = runs("ihis", "base")
    arx = r.get(f, "arx_published")

    def at(rs: dict[float, dict], key: str) -> str:
        return ", ".join(f"{dur(rs[s][key])} at {s:.0%}" for s in sorted(rs))

    checked = ", ".join(f"{ihis[s]['nodes_checked']:,}" for s in sorted(ihis))
    rss = r.get(f, "datasets", "ihis", "current", "peak_rss_gib")
    return (f"A k-anonymity (k = 5) search of the IHIS-shaped table takes {at(ihis, 'search_s')} "
            f"suppression ({checked} nodes checked; peak RSS {rss:.2f} GiB), the previous "
            f"commit in the same run {at(base, 'search_s')}; ARX's Flash is published at "
            f"{span(arx['ihis']['seconds'], num)} s for IHIS (other hardware, and a search for "
            f"one loss-optimal node). On Adult with 9 QIs a search after the first call takes "
            f"{at(adult, 'search_s')} (ARX: {span(arx['adult']['seconds'], num)} s).")


def release_scale(r: Results) -> str:
    """The release at scale: each path's wall, CPU and peak memory against a read + write."""
    f = "release_scale.json"
    rows = []
    for size in r.rows(f, "sizes"):
        for task, paths in size["tasks"].items():
            ref = paths.get("memory") or paths["out_of_core"]    # the file every path must be
            same_as = {p: x["runs"][0]["content_sha256"] == ref["runs"][0]["content_sha256"]
                       for p, x in paths.items() if isinstance(x, dict) and "runs" in x
                       and p not in ("read_write", "memory") and x is not ref}
            for path in ("read_write", "memory", "out_of_core", "duckdb", "dask", "spark"):
                if path not in paths:
                    continue
                x = paths[path]
                cells = x["runs"][0].get("cells")
                same = same_as.get(path)
                rows.append([count(size["rows"]), task.replace("_", " "),
                             path.replace("_", " "), dur(x["wall_s"]), num(x["cpu_s"]),
                             f"{x['peak_gib']:.2f}", count(x["rows_per_s"]),
                             times(x["vs_read_write"]),
                             count(cells) if cells else "",
                             "" if same is None else "yes" if same else "NO"])
    table = _table(["rows", "task", "path", "wall", "CPU-s", "peak GiB", "rows/s",
                    "× read + write", "cells", "same file (in memory, else out of core)"],
                   rows)
    big = max(r.rows(f, "sizes"), key=lambda x: x["rows"])
    ooc = [t["out_of_core"] for t in big["tasks"].values() if "out_of_core" in t]
    worst = max(ooc, key=lambda x: x["peak_gib"])
    per_cell = worst["peak_gib"] * 2**30 / worst["runs"][0]["cells"]
    note = (f"At {count(big['rows'])} rows the out-of-core path held "
            f"{count(worst['runs'][0]['cells'])} cells at a peak of {worst['peak_gib']:.2f} GiB, "
            f"{per_cell:,.0f} bytes a cell. ")
    dates = "; ".join(f"{count(x['rows'])} rows: " + ", ".join(
        f"`{c}`" for c in (x.get("commands") or [x.get("command") or "python -m "
                                                  "benchmarks.bench_release_scale"]))
        for x in r.rows(f, "sizes"))
    return (table + "\n\n" + note + measured(r, f, " (each path a fresh process, peak "
                                                   "resident memory by wait4)")
            + f" Each size's runs: {dates} (the paths a later command measured replace "
              "those of an earlier one).")


def release_cli(r: Results) -> str:
    """``fastpriv anonymize`` on 100M rows out of core, against a read + write."""
    f = "release_scale_cli.json"
    paths = r.get(f, "paths")
    rw = paths["read_write"]
    parts = []
    for kind in ("cli lattice", "cli mondrian"):
        x = paths[kind]
        run = x["runs"][0]
        if not run["out_of_core"] or not run["reaudit"]["groups_equal"] or \
                not run["reaudit"]["criterion_holds"]:
            raise ReadmeDataError(f"benchmarks/results/{f}: {kind} did not run out of core "
                                  "or its re-audit failed")
        parts.append(f"`--method {kind.split()[1]}` takes {dur(x['wall_s'])} "
                     f"({times(x['vs_read_write'])} the read + write, "
                     f"{count(x['rows_per_s'])} rows/s) at a peak of {x['peak_gib']:.2f} GiB, "
                     f"{count(run['n_cells'])} cells, {count(run['reaudit']['n_groups'])} groups, "
                     f"its re-audit holding")
    return (f"`fastpriv anonymize` on {count(r.get(f, 'input', 'rows'))} rows (Adult's age, sex, "
            f"race, marital status and occupation repeated; k = 10,000 and ℓ = 3) takes the "
            f"out-of-core path by itself: a plain Parquet read + write of the same columns takes "
            f"{dur(rw['wall_s'])} at {rw['peak_gib']:.2f} GiB; " + "; ".join(parts) + ". "
            + measured(r, f, f" (`{r.get(f, 'command')}`, each a fresh process)"))


def _arx_q(r: Results) -> dict[str, dict]:
    return r.get("arx_questions.json", "questions")


def arx_questions(r: Results) -> str:
    """ARX's questions on ARX's Adult files, beside ARX 3.9.2's live times (issue 48)."""
    f = "arx_questions.json"
    q = _arx_q(r)
    arx = r.get(f, "arx")
    loss0, loss2 = r.get(f, "questions", "k5_loss_0"), r.get(f, "questions", "k5_loss_2")
    others = [(m, q[f"k5_{m}_{s}"]) for m in ("entropy", "nm_entropy", "nm_precision", "aecs",
                                              "height", "precision", "discernibility")
              for s in (0, 2)]
    at0 = [x["search_s"] for m, x in others if x["suppression"] == 0]
    at2 = [x["search_s"] for m, x in others if x["suppression"] > 0]
    u, a = r.get(f, "questions", "uniqueness"), r.get(f, "questions", "avg_risk_2")
    ih0, ih2 = r.get(f, "questions", "ihis_k5_loss_0"), r.get(f, "questions", "ihis_k5_loss_2")
    iha = r.get(f, "questions", "ihis_avg_risk_2")
    return (f"On ARX's own Adult files (9 QIs, {loss0['n_nodes']:,} nodes; `{f}`, "
            f"`python -m benchmarks.bench_arx_questions`, each question in a fresh process, "
            f"the median of {len(loss0['searches_s'])} searches after the first) the loss "
            f"optimum under 5-anonymity takes {dur(loss0['search_s'])} at 0 % and "
            f"{dur(loss2['search_s'])} at 2 % suppression ({dur(loss0['end_to_end_s'])} and "
            f"{dur(loss2['end_to_end_s'])} with building the lattice; ARX 3.9.2 measured live "
            f"for issue 48, warm JVM, median: {arx['k5_loss_0']['seconds']:g} s and "
            f"{arx['k5_loss_2']['seconds']:g} s), the other quality models' optima "
            f"{dur(at0)} at 0 % and {dur(at2)} at 2 %; population uniqueness (Dankar's rule, "
            f"the USA's population, 0.01) {dur(u['search_s'])} ({num(u['search_cpu_s'])} "
            f"CPU-s; ARX {arx['uniqueness']['cpu_seconds']:g} CPU-s), checking "
            f"{u['nodes_checked']:,} nodes (ARX {arx['uniqueness']['nodes_checked']}); "
            f"average risk 0.01 at 2 % {dur(a['search_s'])}, loss {a['value']:.4f} with "
            f"{a['rows_suppressed']:,} rows suppressed (ARX: {arx['avg_risk_2']['loss']}, "
            f"{arx['avg_risk_2']['rows_suppressed']:,}). On the IHIS shape "
            f"({count(ih0['rows'])} rows) the loss optimum under 5-anonymity takes "
            f"{dur(ih0['search_s'])} at 0 % and {dur(ih2['search_s'])} at 2 %, average risk "
            f"{dur(iha['search_s'])}. {measured(r, f)}")


def arx_limit(r: Results) -> str:
    """Known limitation: which of issue 48's targets (ten times ARX's speed) are missed."""
    f = "arx_questions.json"
    what = {"k5_loss_0": "the loss optimum at 0 %", "k5_loss_2": "the loss optimum at 2 %",
            "uniqueness": "population uniqueness"}
    q = {k: r.get(f, "questions", k) for k in what}

    def said(k: str) -> str:
        x = q[k]
        how = "within" if x["target_met"] else "above"
        return f"{what[k]} ({dur(x['search_s'])}, {how} {dur(x['arx']['target_s'])})"

    met = [said(k) for k in what if q[k]["target_met"]]
    missed = [said(k) for k in what if not q[k]["target_met"]]
    loss0, loss2 = q["k5_loss_0"], q["k5_loss_2"]
    text = (f"ARX's questions at ten times ARX's speed (issue 48's targets; `{f}`, "
            f"`target_met`): met by the search for {' and '.join(met) or 'none'}, missed for "
            f"{' and '.join(missed) or 'none'}. The 2 % loss optimum on ARX's Adult is "
            f"{times(1 / loss2['vs_arx'])} faster than ARX, not ten times: the monotone search "
            f"checks {loss2['nodes_checked']:,} nodes there to know every minimal one, each "
            f"rolled up from a cached node (`phases_s`). With building the lattice "
            f"(`target_met_end_to_end`) the 0 % optimum takes {dur(loss0['end_to_end_s'])}.")
    for k, why in r.get(f, "not_run").items():
        text += f" Not measured: `{k}` — {why}."
    return text


def figure7_published(r: Results) -> str:
    """Reproduction headline: Chen Fig. 7, the published ratios."""
    f = "skyline_figure7.json"
    p = r.rows(f, "a_size")[0]
    return (f"≈ {times(r.get(f, 'published', 'a_ratio_10_10_10'))} at "
            f"({p['l']},{p['k']},{p['m']}); ≈ {times(r.get(f, 'published', 'c_ratio_k32'))} at "
            f"k = {_skyline_k_max(r)['k']}")


def figure7_ours(r: Results) -> str:
    """Reproduction headline: Chen Fig. 7, ours."""
    f = "skyline_figure7.json"
    a = r.rows(f, "a_size")
    kx = _skyline_k_max(r)
    return (f"end to end {times(r.col(f, a, 'ratio'))} for a repeated (σ, ℓ), "
            f"{times(r.col(f, a, 'cold_ratio'))} re-finding the records each call "
            f"({times(r.col(f, a, 'prepared_ratio'))} on prepared inputs); {times(kx['ratio'])} / "
            f"{times(kx['cold_ratio'])} ({times(kx['prepared_ratio'])}) at k = {kx['k']} — "
            f"`{f}`")


def figure8_ours(r: Results) -> str:
    """Reproduction headline: Chen Fig. 8, ours."""
    big, _, _ = _figure8(r)
    streamed, whole = _figure8_text(r)
    return (f"{count(big)} rows: {streamed.replace(', ', ' / ')} streamed, "
            f"{whole.replace(', ', ' / ')} whole table — `chen_figure8.json`")


FOREGROUND_REPRO = "reproduction/foreground_reproduction.json"
RULES = ("pooled", "uniform", "global")


def _fg_point(r: Results, point: str, rule: str, measure: str) -> float:
    """Mean of ``measure`` over the Anatomy seeds at ``"r=R,q=Q"`` under ``rule``."""
    return r.get(FOREGROUND_REPRO, "ours", f"{point},{rule}", measure, "mean")


def foreground_points(r: Results) -> str:
    """Every published breach probability of the foreground attack beside ours, per rule."""
    f = FOREGROUND_REPRO
    rows = []
    for point, pub in r.get(f, "published").items():
        if not isinstance(pub, dict) or "avg_breach_probability" not in pub:
            continue
        rr, q = (int(x.split("=")[1]) for x in point.split(","))
        ours = [f"{_fg_point(r, point, rule, 'avg_breach_probability'):.3f}" for rule in RULES]
        rows.append([f"r = {rr}, QI {q}", f"{pub['avg_breach_probability']:g}", *ours])
    return _table(["point", "published", *(f"`{x}`" for x in RULES)], rows)


def _fg_errors(r: Results) -> tuple[list[str], list[str]]:
    f = FOREGROUND_REPRO
    pub = r.get(f, "published", "relative_error")
    ls = [int(k.split("=")[1]) for k in pub]
    ours = [f"{_fg_point(r, f'r={ell},q=5', 'pooled', 'avg_absolute_error'):.2g}" for ell in ls]
    return [f"{100 * v:g}%" for v in pub.values()], ours


def foreground_error(r: Results) -> str:
    """The paper's relative error of the mined distributions beside our absolute error."""
    pub, ours = _fg_errors(r)
    return (f"The paper's \"{' / '.join(pub)} relative error\" has the magnitude of a mean "
            f"absolute error; ours is {' / '.join(ours)} (pooled, ℓ = r = 2 / 10, QI 5), and "
            f"both measures are reported (`benchmarks/results/{FOREGROUND_REPRO}`, details in "
            f"`benchmarks/results/REPRODUCTION.md`).")


def foreground_headline(r: Results) -> str:
    """Reproduction headline: Wong foreground attack, r = 2, QI 5, ours."""
    p = ", ".join(f"{rule} {_fg_point(r, 'r=2,q=5', rule, 'avg_breach_probability'):.3f}"
                  for rule in RULES)
    _, ours = _fg_errors(r)
    return f"avg breach probability {p}; absolute error {ours[0]} (pooled)"


#: NAME -> renderer; every ``<!-- perf:NAME -->`` of the README has one, and every one is used.
BLOCKS: dict[str, Callable[[Results], str]] = {
    "machines": machines,
    "table": perf_table,
    "not-paid": not_paid,
    "cold-commands": cold_commands,
    "cold-cached": cold_cached,
    "cold-install": cold_install,
    "release-scale": release_scale,
    "release-cli": release_cli,
    "compile-profile": compile_profile,
    "portable-kernels": portable_kernels,
    "test-suite": test_suite,
    "engines": engines,
    "engines-large": engines_large,
    "engines-projection": engines_projection,
    "limit-skyline": skyline_limit,
    "limit-threads": threads_limit,
    "limit-scale": scale_limit,
    "limit-peers": peers_limit,
    "limit-peers-first-call": peers_first_call,
    "lattice-scale": lattice_scale,
    "arx-questions": arx_questions,
    "limit-arx": arx_limit,
    "fig7-published": figure7_published,
    "fig7-ours": figure7_ours,
    "fig8-ours": figure8_ours,
    "foreground-points": foreground_points,
    "foreground-error": foreground_error,
    "foreground-ours": foreground_headline,
}


# ------------------------------------------------------------------ rewriting the README
def _wrap(text: str, prefix: str, suffix: str) -> str:
    """Wrap a span to WIDTH: its first line continues ``prefix``, ``suffix`` ends the last."""
    if "\n" in text or "|" in prefix or text.startswith("|"):   # tables stay as they are
        return text
    indent = "  " if re.match(r"\s*[*-] ", prefix) else re.match(r"\s*", prefix).group(0)
    lines = textwrap.wrap(text + "\1" * len(suffix), width=WIDTH,
                          initial_indent="\0" * len(prefix), subsequent_indent=indent,
                          break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines).replace("\0", "").replace("\1", "")


def render(readme: str, results: Results | None = None) -> str:
    """The README with every perf span re-rendered from the results."""
    results = results or Results()
    names = [m.group(1) for m in MARKER.finditer(readme)]
    unknown = sorted(set(names) - set(BLOCKS))
    if unknown:
        raise ReadmeDataError(f"README.md: no renderer for perf block(s) {unknown} "
                              f"(known: {sorted(BLOCKS)})")
    missing = sorted(set(BLOCKS) - set(names))
    if missing:
        raise ReadmeDataError(f"README.md: perf block(s) {missing} have no markers")

    def one(m: re.Match) -> str:
        name, old = m.group(1), m.group(2)
        results.touched = set()
        try:
            text = BLOCKS[name](results).strip()
        except ReadmeDataError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError) as e:
            files = ", ".join(f"benchmarks/results/{f}" for f in sorted(results.touched))
            raise ReadmeDataError(f"{files or 'benchmarks/results'}: README block {name!r} "
                                  f"cannot be rendered ({type(e).__name__}: {e}); update "
                                  f"benchmarks/readme_tables.py to the new format") from e
        open_, close = f"<!-- perf:{name} -->", f"<!-- /perf:{name} -->"
        if old.startswith("\n"):
            return f"{open_}\n{_wrap(text, '', '')}\n{close}"
        line_start = readme.rfind("\n", 0, m.start()) + 1
        prefix = readme[line_start:m.start()] + open_
        line_end = readme.find("\n", m.end())
        suffix = close + readme[m.end():len(readme) if line_end < 0 else line_end]
        return open_ + _wrap(text, prefix, suffix) + close

    return MARKER.sub(one, readme)


def diff(readme: str, results: Results | None = None, name: str = "README.md") -> str:
    """A unified diff from the README as it is to the README as the results say; '' if equal."""
    new = render(readme, results)
    return "".join(difflib.unified_diff(readme.splitlines(True), new.splitlines(True),
                                        f"{name} (as committed)",
                                        f"{name} (from benchmarks/results)"))


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: rewrite the README, or ``--check`` it."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.readme_tables",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 and print a diff if README and JSON disagree")
    ap.add_argument("--readme", type=Path, default=README, help="default: %(default)s")
    ap.add_argument("--results", type=Path, default=RESULTS, help="default: %(default)s")
    args = ap.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    try:
        results = Results(args.results)
        if args.check:
            d = diff(text, results, args.readme.name)
            if d:
                sys.stdout.write(d)
                print(f"\n{args.readme} disagrees with {args.results}: run "
                      f"`python -m benchmarks.readme_tables`", file=sys.stderr)
                return 1
            return 0
        new = render(text, results)
    except ReadmeDataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if new != text:
        args.readme.write_text(new, encoding="utf-8")
        print(f"rewrote {args.readme}")
    else:
        print(f"{args.readme} already agrees with {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
