"""The model registry: one declaration per privacy model, read by the CLI, verdict and warm-up.

Every model fastpriv audits is declared here once: its name, the question it answers in
plain words, the function that computes it, its result type, its kernel modules, what it
reads (groups, rows or the classes of identical quasi-identifiers), whether it reads the
sensitive column, which engines feed it, and — for the models whose verdict is declared
here — their thresholds with the CLI flags. The consumers read this table instead of keeping
their own lists:

* ``fastpriv audit`` and ``fastpriv report`` add a flag for every declared threshold
  (:func:`add_threshold_flags`) and pass the values on as ``thresholds=``;
* the verdict (:mod:`fastpriv.report.verdict`) runs the ``checks`` function of every model
  whose threshold was given (:func:`verdict_models`);
* ``fastpriv warmup --models`` accepts the warm-up groups (:data:`WARMUP_GROUPS`);
* ``docs/api.md``'s model table is generated from it (:func:`markdown_table`) and a test keeps
  the page equal to the output.

Adding a model therefore touches its kernel module (if it has one), its model module, its
entry in :data:`MODELS` and its tests. The module imports nothing heavy: the functions are
named by dotted path and imported only when called.

Examples
--------
>>> from fastpriv.registry import model
>>> model("k_map").question
'Is every record hidden among at least k people of the population?'
>>> [t.flag for t in model("delta_presence").thresholds]
['--max-delta']

"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Threshold", "Option", "Model", "MODELS", "WARMUP_GROUPS", "ENGINES",
           "ANONYMIZE_ENGINES", "model", "module_of",
           "verdict_models", "add_threshold_flags", "thresholds_of", "markdown_table",
           "engine_table", "load", "make_check", "run_verdict_models", "schema_version",
           "declared_options", "add_option_flags", "options_of", "glossary",
           "warmup_workloads", "generalizable_checks", "render_model_html", "remedy_criteria",
           "closest_checks", "hooks", "check_model", "report_sections", "target_labels"]

#: Where data can live when a model reads it: in memory (a table or a path), streamed in
#: record batches, a Dask or Spark cluster, DuckDB (counts pushed down into SQL).
ENGINES = ("memory", "stream", "dask", "spark", "duckdb")


@dataclass(frozen=True)
class Threshold:
    """A verdict threshold of a model: its keyword, CLI flag, type and meaning.

    ``kind`` names the CLI argument type (``"size"``: an integer ≥ 1, ``"probability"``: a
    number in [0, 1]); ``default`` None means the check runs only when the threshold is
    given.
    """

    name: str
    flag: str
    kind: str
    help: str
    default: Any = None


@dataclass(frozen=True)
class Option:
    """A model option (not a threshold): its keyword, CLI flag and meaning.

    ``flag`` is added to ``fastpriv audit`` and ``fastpriv report`` unless the command
    already has a flag of that name (then the model reads that flag: one flag, one
    meaning, e.g. ``--hierarchies``, the folder of generalization hierarchies).
    """

    name: str
    flag: str
    help: str
    metavar: str = "VALUE"
    default: Any = None


@dataclass(frozen=True)
class Model:
    """One privacy model: what it answers, how it is computed and how its verdict is read."""

    name: str
    title: str
    question: str
    call: str
    #: the type ``call`` returns, as its return annotation names it (``"int"``,
    #: ``"KMapResult"``); ``tests/test_registry.py`` compares the two
    result: str
    kernels: tuple[str, ...]
    reads: str
    sensitive: bool
    engines: tuple[str, ...]
    warmup: str
    thresholds: tuple[Threshold, ...] = ()
    checks: str | None = None
    #: what the verdict must be given for the model to run (keys of
    #: ``fastpriv.population.NEEDS``: ``"qi_classes"``, ``"population_table"``); without it
    #: the model's verdict hook skips the check, naming what is missing
    needs: tuple[str, ...] = field(default=())
    #: the model's own options (:class:`Option`), passed to ``checks`` as ``options=``
    options: tuple[Option, ...] = ()
    #: ``"module:function"`` returning the model's per-group statistic: ``per_group(rel, *,
    #: q, options) -> numpy.ndarray`` (one float per group of ``rel``, in its group order;
    #: ``q`` the whole table's sensitive distribution {label: probability} when
    #: ``needs_q``, else None); the engines' fold runs it for every model declaring it
    per_group: str | None = None
    #: which direction of ``per_group`` is worse: ``"min"`` or ``"max"``
    worse: str | None = None
    needs_q: bool = False
    #: ``"module:function"`` rendering the model's report section as HTML
    #: (``html(section) -> str``); None: the verdict's check lines alone
    html: str | None = None
    #: lines of the report's glossary: ``((term, definition), ...)``
    glossary: tuple[tuple[str, str], ...] = ()
    #: a generalization of the quasi-identifiers can fix a failing check of this model
    #: (the verdict then offers the Mondrian command as its remedy)
    generalizable: bool = False
    #: ``"module:function"`` returning the criterion flags a Mondrian release needs to meet
    #: this model's thresholds (``remedy_criteria(by_id, params) -> list[str]``, e.g.
    #: ``["--max-t", "0.2"]``; ``by_id`` the verdict's checks by id, none when the model's
    #: are absent; ``params`` the report's parameters, ``thresholds`` the declared ones);
    #: read for a ``generalizable`` model
    remedy_criteria: str | None = None
    #: ``"module:function"`` the warm-up runs for the model's group (compiles its kernels):
    #: the calls the model's documented examples do not reach (options, large-input and
    #: parallel variants); ``fastpriv warmup`` names it after its module
    warmup_workload: str | None = None
    #: the relative cold compile cost of :attr:`warmup_workload` (``bench_cold_start``
    #: profile), which ``fastpriv warmup --jobs`` balances across its workers
    warmup_cost: float = 0.0
    #: modules beyond that of ``call`` whose documented examples the warm-up runs for the
    #: model's group (``fastpriv._warmup.DOCTEST_MODULES`` lists those it runs)
    warmup_examples: tuple[str, ...] = ()
    #: ``"module:attribute"``: the JSON schema of the model's section under ``models``
    schema: str | None = None
    #: the report schema's minor version that added the model's section (``1.4``)
    since: str | None = None
    #: the model's own source files beyond those of its declared functions (its CLI
    #: sub-command), where its id may be spelled out (``tests/test_registry_only.py``)
    modules: tuple[str, ...] = ()
    #: the ids of the verdict checks the model adds (empty: its name alone)
    check_ids: tuple[str, ...] = ()
    #: ``"module:function"`` building the model's report sections
    #: (``section(ctx) -> {name: section}``; ``ctx`` the report's context: ``rel``, the
    #: release, None without a sensitive column; ``inp``, the loaded input; ``o``, the
    #: options; ``knowledge``, ``risk``, ``max_risk``, ``population``, ``weight``); a
    #: function declared by several models is called once
    section: str | None = None
    #: the names of the model's sections in the report's JSON (:func:`report_sections`)
    section_names: tuple[str, ...] = ()
    #: ``"module:function"`` returning the people the model's witness exposes
    #: (``targets(ctx, sec) -> list[dict]``: ``source``, ``row``, ``group``, ``value``,
    #: ``certainty``, ``knowledge``, ``why``), listed in the report's ``targets``
    targets: str | None = None
    #: ``"module:function"`` returning the model's verdict checks read from the report's
    #: sections, for the models whose section the report builds itself
    #: (``report_checks(sec, params, sens) -> list[dict]``); a function declared by several
    #: models (a family read from one section) is called once, at its first model
    report_checks: str | None = None
    #: ``"module:function"`` naming the model's risk as the verdict's key risk
    #: (``key_risk(sec, by_id, checks, params, sens) -> dict | None``); the verdict tries
    #: these in ``key_risk_rank`` order, then names the first failing check
    key_risk: str | None = None
    key_risk_rank: int = 0
    #: the model's check ids the verdict may name as the closest risk beyond the thresholds
    #: when nothing fails (the one with the highest achieved certainty)
    closest: tuple[str, ...] = ()
    #: ``"module:function"`` returning the model's thresholds that no generalization can
    #: reach (``unreachable(by_id, sec, params) -> list[str]``, ``sec`` the report's sections,
    #: among them ``whole_table``: the one-group audit of the whole table)
    unreachable: str | None = None
    #: ``"module:function"`` returning the remedy of the model's failing check when it is not
    #: generalizable (``remedy(params, *, unreachable, generalize, command) -> str | None``:
    #: ``generalize()`` the verdict's generalization remedy, ``command(method, criteria)``
    #: the ``fastpriv anonymize`` command reading the data as the audit did)
    remedy: str | None = None
    #: ``"module:function"`` rendering the model's top-level report sections as HTML, for
    #: the models whose section the report builds itself (``report_html(d) -> str``, ``d``
    #: the report payload; "" when its section is absent); a function declared by several
    #: models is called once, at its first model
    report_html: str | None = None
    #: how the report page's "found by" column names the targets of each of the model's
    #: ``targets`` sources: ``((source, label), ...)``
    target_labels: tuple[tuple[str, str], ...] = ()
    #: ``"module:attribute"``: ``{section name: JSON schema}`` of the model's top-level
    #: report sections (those of :attr:`section`; every report has them), read by
    #: :mod:`fastpriv.report.schema`; a dict declared by several models is read once
    section_schemas: str | None = None
    #: ``"module:function"``: the model's own part of ``fastpriv audit`` with a sensitive
    #: column, in place of its report section in the command's JSON
    #: (``audit_cli(rel, args, d) -> (entry, ok)``: ``d`` the report payload, ``entry`` the
    #: JSON under the model's name, None: none for this run; ``ok`` False makes the exit
    #: status 1); it prints what it shows
    audit_cli: str | None = None
    #: run :attr:`audit_cli` after the verdict is printed (else before it)
    audit_cli_after: bool = False

    def own_files(self) -> set[str]:
        """Return the source files (``fastpriv/….py``) that belong to this model alone.

        Those of every function it declares (``call``, ``checks``, ``per_group``, ``html``,
        ``remedy_criteria``, ``warmup_workload``, ``schema``, ``report_checks``,
        ``key_risk``, ``unreachable``, ``remedy``, ``section``, ``targets``,
        ``report_html``, ``section_schemas``, ``audit_cli``) and its :attr:`modules`.
        """
        paths = [self.call, self.checks, self.per_group, self.html, self.remedy_criteria,
                 self.warmup_workload, self.schema, self.report_checks, self.key_risk,
                 self.unreachable, self.remedy, self.section, self.targets,
                 self.report_html, self.section_schemas, self.audit_cli]
        out = set(self.modules)
        for p in paths:
            if p:
                out.add(module_of(p).replace(".", "/") + ".py")
        return out

    def ids(self) -> tuple[str, ...]:
        """Return the ids of the verdict checks the model adds (:attr:`check_ids`, or its name)."""
        return self.check_ids or (self.name,)

    def load_checks(self) -> Callable[..., list[dict]]:
        """Import the function that turns report sections into this model's verdict checks."""
        if self.checks is None:
            raise LookupError(f"model {self.name!r} declares no verdict checks")
        return load(self.checks)


def module_of(path: str) -> str:
    """Return the module of ``"package.module:attribute"`` (or ``package.module.attribute``).

    >>> module_of("fastpriv.classic.audit"), module_of("fastpriv.hierarchical_t:warmup")
    ('fastpriv.classic', 'fastpriv.hierarchical_t')
    """
    return path.partition(":")[0] if ":" in path else path.rpartition(".")[0]


def load(path: str) -> Any:
    """Import ``"package.module:attribute"`` (or ``package.module.attribute``)."""
    mod, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    return getattr(importlib.import_module(mod), attr)


_GROUP_ENGINES = ENGINES
#: the row-level models are folds over complete groups on every engine (r-robustness:
#: ``robustness_audit``, the foreground attack: ``foreground_audit`` of spark, distributed,
#: pushdown and stream_counts), or read the distinct (qi, group, sensitive) rows with their
#: count (``row_counts``)
_ROW_ENGINES = ("memory", "stream", "dask", "spark", "duckdb")
#: the class-based models read the QI equivalence classes (distinct QI tuples with their
#: sizes): counted in record batches (``risk.ClassCounts.from_batches``) or by a ``GROUP BY
#: qi`` where the data lives (``class_counts`` of spark, distributed, pushdown)
_CLASS_ENGINES = ("memory", "stream", "dask", "spark", "duckdb")
#: k-map and δ-presence also count a population table's classes, which the engines do too
#: (its ``class_counts``; a streamed sample or population: ``stream_counts.class_counts``)
_POPULATION_ENGINES = ("memory", "stream", "dask", "spark", "duckdb")

#: Every model, in the order of the verdict.
MODELS: tuple[Model, ...] = (
    Model("k_anonymity", "k-anonymity",
          "Does every group hide each person among enough others?",
          "fastpriv.classic.k_anonymity", "int", ("classic", "counting"), "groups", False,
          _GROUP_ENGINES, "classic",
          report_checks="fastpriv.report._models.classical:checks",
          section="fastpriv.report._models.classical:sections", section_names=("classical",),
          section_schemas="fastpriv.report._models.classical:SECTION_SCHEMAS",
          generalizable=True,
          remedy_criteria="fastpriv.report._models.classical:remedy_criteria"),
    Model("l_diversity", "distinct ℓ-diversity",
          "Does every group contain several different sensitive values?",
          "fastpriv.classic.l_diversity", "int", ("classic", "counting"), "groups", True,
          _GROUP_ENGINES, "classic",
          report_checks="fastpriv.report._models.classical:checks",
          section="fastpriv.report._models.classical:sections", section_names=("classical",),
          section_schemas="fastpriv.report._models.classical:SECTION_SCHEMAS",
          unreachable="fastpriv.report._models.classical:unreachable", generalizable=True,
          remedy_criteria="fastpriv.report._models.classical:remedy_criteria"),
    Model("entropy_l_diversity", "entropy ℓ-diversity",
          "Are the sensitive values spread evenly enough within every group?",
          "fastpriv.classic.entropy_l_diversity", "float", ("classic", "counting"), "groups",
          True, _GROUP_ENGINES, "classic",
          report_checks="fastpriv.report._models.classical:checks",
          section="fastpriv.report._models.classical:sections", section_names=("classical",),
          section_schemas="fastpriv.report._models.classical:SECTION_SCHEMAS",
          unreachable="fastpriv.report._models.classical:unreachable", generalizable=True,
          remedy_criteria="fastpriv.report._models.classical:remedy_criteria"),
    Model("t_closeness", "t-closeness",
          "Does every group's mix of sensitive values resemble the whole table's?",
          "fastpriv.classic.t_closeness", "float", ("classic", "counting"), "groups", True,
          _GROUP_ENGINES, "classic",
          report_checks="fastpriv.report._models.classical:checks", generalizable=True,
          section="fastpriv.report._models.classical:sections", section_names=("classical",),
          section_schemas="fastpriv.report._models.classical:SECTION_SCHEMAS",
          remedy_criteria="fastpriv.report._models.classical:remedy_criteria"),
    Model("alpha_k_anonymity", "(α,k)-anonymity",
          "Without any background knowledge, how sure can anyone be of a person's value?",
          "fastpriv.classic.audit", "ClassicAudit", ("classic", "counting"), "groups", True,
          _GROUP_ENGINES, "classic",
          report_checks="fastpriv.report._models.classical:checks",
          section="fastpriv.report._models.classical:sections", section_names=("classical",),
          section_schemas="fastpriv.report._models.classical:SECTION_SCHEMAS",
          key_risk="fastpriv.report._models.classical:key_risk", key_risk_rank=1,
          targets="fastpriv.report._models.classical:targets",
          target_labels=(("alpha_k_anonymity", "release alone"),),
          closest=("alpha_k_anonymity",),
          unreachable="fastpriv.report._models.classical:unreachable", generalizable=True,
          remedy_criteria="fastpriv.report._models.classical:remedy_criteria",
          warmup_workload="fastpriv.classic:warmup", warmup_cost=1.0),
    Model("ck_safety", "(c,k)-safety",
          "Can an adversary who knows k facts about people become c sure of anyone's value?",
          "fastpriv.ck_safety.audit", "CkAudit", ("ck_safety", "counting"), "groups", True,
          _GROUP_ENGINES, "ck_safety",
          check_ids=("ck_safety", "ck_safety_implications", "ck_safety_negations"),
          report_checks="fastpriv.report._models.ck:checks",
          section="fastpriv.report._models.ck:sections", section_names=("ck_safety",),
          section_schemas="fastpriv.report._models.ck:SECTION_SCHEMAS",
          targets="fastpriv.report._models.ck:targets",
          report_html="fastpriv.report._models.ck:html",
          target_labels=(("ck_safety_implications", "(c,k) implications"),
                         ("ck_safety_negations", "(c,k) negated atoms")),
          key_risk="fastpriv.report._models.ck:key_risk", key_risk_rank=3,
          closest=("ck_safety_implications",),
          unreachable="fastpriv.report._models.ck:unreachable", generalizable=True,
          remedy_criteria="fastpriv.report._models.ck:remedy_criteria",
          warmup_workload="fastpriv.ck_safety:warmup", warmup_cost=3.5,
          audit_cli="fastpriv.cli._ck_safety:audit"),
    Model("skyline", "privacy skyline",
          "Can an adversary with (ℓ, k, m) knowledge become c sure of anyone's value?",
          "fastpriv.skyline.check", "SkylineCheck", ("skyline", "counting"), "groups", True,
          _GROUP_ENGINES, "skyline", modules=("fastpriv/cli/skyline.py",),
          report_checks="fastpriv.report._models.skyline:checks",
          section="fastpriv.report._models.skyline:sections", section_names=("skyline",),
          section_schemas="fastpriv.report._models.skyline:SECTION_SCHEMAS",
          targets="fastpriv.report._models.skyline:targets",
          report_html="fastpriv.report._models.skyline:html",
          target_labels=(("skyline", "privacy skyline"),),
          key_risk="fastpriv.report._models.skyline:key_risk", key_risk_rank=4,
          closest=("skyline",), remedy="fastpriv.report._models.skyline:remedy",
          warmup_workload="fastpriv.skyline:warmup", warmup_cost=7.0),
    Model("robustness", "r-robustness",
          "Can statistics linking quasi-identifiers to sensitive values single anyone out?",
          "fastpriv.robustness.audit", "RobustnessAudit", ("possible_worlds",), "rows", True,
          _ROW_ENGINES, "robustness", modules=("fastpriv/cli/robustness.py",),
          report_checks="fastpriv.report._models.rowlevel:robustness_checks",
          section="fastpriv.report._models.rowlevel:robustness_sections",
          section_names=("robustness",),
          section_schemas="fastpriv.report._models.rowlevel:ROBUSTNESS_SCHEMAS",
          targets="fastpriv.report._models.rowlevel:robustness_targets",
          report_html="fastpriv.report._models.rowlevel:html",
          target_labels=(("robustness", "r-robustness"),),
          key_risk="fastpriv.report._models.rowlevel:robustness_key_risk", key_risk_rank=5,
          closest=("robustness",), remedy="fastpriv.report._models.rowlevel:remedy",
          warmup_workload="fastpriv.robustness:warmup", warmup_cost=9.0,
          warmup_examples=("fastpriv.knowledge",)),
    Model("foreground", "foreground-knowledge attack",
          "Can patterns mined from the release itself single anyone out?",
          "fastpriv.foreground.attack", "ForegroundAttack", ("foreground", "possible_worlds"),
          "rows", True, _ROW_ENGINES, "foreground",
          report_checks="fastpriv.report._models.rowlevel:foreground_checks",
          section="fastpriv.report._models.rowlevel:foreground_sections",
          section_names=("foreground",),
          section_schemas="fastpriv.report._models.rowlevel:FOREGROUND_SCHEMAS",
          targets="fastpriv.report._models.rowlevel:foreground_targets",
          report_html="fastpriv.report._models.rowlevel:html",
          target_labels=(("foreground", "foreground attack"),),
          key_risk="fastpriv.report._models.rowlevel:foreground_key_risk", key_risk_rank=2,
          closest=("foreground",), remedy="fastpriv.report._models.rowlevel:remedy",
          warmup_workload="fastpriv.foreground:warmup", warmup_cost=12.0),
    Model("risk", "re-identification risk",
          "Can someone who knows a person's quasi-identifiers pick out their record?",
          "fastpriv.risk.audit", "RiskResult", ("risk",), "classes", False, _CLASS_ENGINES,
          "risk", report_checks="fastpriv.report._models.risk:checks",
          section="fastpriv.report._models.risk:sections", section_names=("risk",),
          report_html="fastpriv.report._models.risk:html",
          unreachable="fastpriv.report._models.risk:unreachable", generalizable=True,
          remedy_criteria="fastpriv.report._models.risk:remedy_criteria",
          warmup_workload="fastpriv.risk:warmup", warmup_cost=2.0,
          audit_cli="fastpriv.cli._risk:audit", audit_cli_after=True),
    Model("k_map", "k-map",
          "Is every record hidden among at least k people of the population?",
          "fastpriv.population.k_map", "KMapResult", ("risk",), "classes", False,
          _POPULATION_ENGINES, "risk",
          thresholds=(Threshold("min_k_map", "--min-k-map", "size",
                                "k-map: every class of the sample matches at least K people "
                                "of the population table (needs --population TABLE)"),),
          checks="fastpriv.population:k_map_checks",
          needs=("qi_classes", "population_table")),
    Model("delta_presence", "δ-presence",
          "Can anyone tell whether a person of the population is in the data?",
          "fastpriv.population.delta_presence", "DeltaPresenceResult", ("risk",), "classes",
          False, _POPULATION_ENGINES, "risk",
          thresholds=(Threshold("max_delta", "--max-delta", "probability",
                                "δ-presence: no population class has more than this share "
                                "of its people in the data, in [0, 1] (needs --population "
                                "TABLE)"),),
          checks="fastpriv.population:delta_presence_checks",
          needs=("qi_classes", "population_table")),
    Model("hierarchical_t", "t-closeness (hierarchical distance)",
          "Does every group's mix of sensitive values resemble the whole table's, values "
          "close in the hierarchy counting as close?",
          "fastpriv.hierarchical_t.hierarchical_t_closeness", "HierarchicalTCloseness", (),
          "groups", True, _GROUP_ENGINES, "classic",
          thresholds=(Threshold("max_hierarchical_t", "--max-hierarchical-t", "probability",
                                "t-closeness with ARX's hierarchical ground distance: every "
                                "group's earth mover's distance to the whole table at most "
                                "T, in [0, 1] (reads the hierarchy of --sensitive from "
                                "--hierarchies DIR, or 'bundled')"),),
          checks="fastpriv.hierarchical_t:checks",
          options=(Option("hierarchies", "--hierarchies",
                          "generalization hierarchies (a folder, as fastpriv anonymize "
                          "reads it; 'bundled': the bundled Adult ones); the verdict "
                          "models reading a hierarchy of --sensitive take it from there",
                          metavar="DIR"),),
          per_group="fastpriv.hierarchical_t:per_group", worse="max", needs_q=True,
          html="fastpriv.hierarchical_t:html",
          glossary=(("hierarchical t-closeness", "t-closeness whose ground distance between "
                     "two sensitive values is the level of their lowest common ancestor in "
                     "the attribute's generalization hierarchy divided by its height (ARX's "
                     "HierarchicalDistanceTCloseness)."),),
          generalizable=True, remedy_criteria="fastpriv.hierarchical_t:remedy_criteria",
          warmup_workload="fastpriv.hierarchical_t:warmup",
          schema="fastpriv.hierarchical_t:SECTION_SCHEMA", since="1.4"),
)

#: ``fastpriv warmup --models`` groups: those of the models plus the anonymizers' own.
WARMUP_GROUPS: tuple[str, ...] = tuple(sorted(
    {m.warmup for m in MODELS} | {"counting", "anonymize", "art", "metrics"}))


def make_check(id_: str, title: str, question: str, satisfied: Any = None,
               achieved: Any = None, required: str = "", plain: str = "", status: str = "ok",
               reason: str | None = None) -> dict:
    """One verdict check: the question, PASS/FAIL (None: not run), the value, a sentence.

    The shape every check of the verdict has (``fastpriv.report.verdict`` and the
    ``checks`` functions of the declared models build them with this function).
    """
    return {"id": id_, "title": title, "question": question, "satisfied": satisfied,
            "achieved": achieved, "required": required, "plain": plain, "status": status,
            "reason": reason}


def run_verdict_models(classes: Any, *, population: Any, thresholds: dict[str, Any],
                       release: Any = None, options: dict[str, Any] | None = None) -> dict:
    """Run every declared verdict model whose threshold is given; ``{name: result}``.

    ``classes`` are the data's :class:`~fastpriv.risk.ClassCounts` (None when the input has
    no QI classes), ``release`` the data's :class:`~fastpriv.Release` (None without a
    sensitive column) and ``options`` the values of the models' declared options (:class:`Option`);
    each model's ``checks`` function is called with ``classes``, ``population=``,
    ``thresholds=``, ``release=`` and ``options=`` (its own options) and returns
    ``{"section": dict, "checks": [check, ...]}``. A model refusing the input (InputError)
    gives a failed section and a failed check; any other error propagates (exit 3).
    """
    from .errors import InputError

    out = {}
    for m in verdict_models(thresholds):
        own = {o.name: (options or {}).get(o.name, o.default) for o in m.options}
        try:
            out[m.name] = m.load_checks()(classes, population=population,
                                          thresholds=thresholds, release=release,
                                          options=own)
        except InputError as exc:
            reason = f"{type(exc).__name__}: {exc}"
            out[m.name] = {"section": {"status": "failed", "reason": reason},
                           "checks": [make_check(m.name, m.title, m.question,
                                                 status="failed", reason=reason)]}
    return out


def declared_options() -> list[Option]:
    """Return the models' declared options, one per name (models may share one)."""
    seen: dict[str, Option] = {}
    for m in MODELS:
        for o in m.options:
            seen.setdefault(o.name, o)
    return list(seen.values())


def add_option_flags(parser: Any) -> None:
    """Add the flag of every declared :class:`Option` the parser does not have yet."""
    have = {s for a in parser._actions for s in a.option_strings}
    for o in declared_options():
        if o.flag not in have:
            parser.add_argument(o.flag, dest=o.name, metavar=o.metavar, default=o.default,
                                help=o.help)


def options_of(args: Any) -> dict[str, Any]:
    """Return the declared options' values from parsed CLI arguments."""
    return {o.name: getattr(args, o.name, o.default) for o in declared_options()}


def glossary() -> list[tuple[str, str]]:
    """Return the glossary lines the models declare, in model order."""
    return [line for m in MODELS for line in m.glossary]


def warmup_workloads() -> dict[str, list[Callable[[], Any]]]:
    """Return ``{warm-up group: [workload, ...]}`` of the models declaring a workload."""
    out: dict[str, list[Callable[[], Any]]] = {}
    for m in MODELS:
        if m.warmup_workload is not None:
            out.setdefault(m.warmup, []).append(load(m.warmup_workload))
    return out


def target_labels() -> dict[str, str]:
    """Return ``{targets source: label}`` of every model (:attr:`Model.target_labels`)."""
    return {src: label for m in MODELS for src, label in m.target_labels}


def generalizable_checks() -> frozenset[str]:
    """Return the ids of the checks a generalization of the QIs can fix."""
    return frozenset(i for m in MODELS if m.generalizable for i in m.ids())


def closest_checks() -> frozenset[str]:
    """Return the check ids the verdict may name as the closest risk (:attr:`Model.closest`)."""
    return frozenset(i for m in MODELS for i in m.closest)


def hooks(attr: str, *, rank: str | None = None) -> list[Callable[..., Any]]:
    """Return the distinct functions the models declare under ``attr``, in model order.

    A function declared by several models (a family) comes once, at its first model;
    ``rank`` names an integer attribute ordering them instead (stable: ties keep the
    model order).
    """
    models = sorted(MODELS, key=lambda m: getattr(m, rank)) if rank else MODELS
    paths = list(dict.fromkeys(getattr(m, attr) for m in models if getattr(m, attr)))
    return [load(p) for p in paths]


def report_sections(*, classes: bool) -> list[str]:
    """Return the names of the models' report sections, in model order.

    ``classes``: those of the models reading the QI classes (after the declared verdict
    models' in the report), else the others' (after the release).
    """
    return list(dict.fromkeys(n for m in MODELS if (m.reads == "classes") == classes
                              for n in m.section_names))


def check_model(check_id: str) -> Model | None:
    """Return the model adding the verdict check ``check_id`` (None: no model's)."""
    return next((m for m in MODELS if check_id in m.ids()), None)


def remedy_criteria(by_id: dict[str, Any], params: dict[str, Any]) -> list[str]:
    """Return the Mondrian criterion flags of every model (each reads its own checks).

    ``by_id`` are the verdict's checks by id, ``params`` the report's parameters (the
    declared thresholds under ``thresholds``); each model's ``remedy_criteria`` returns
    nothing when its checks are absent.
    """
    return [flag for fn in hooks("remedy_criteria") for flag in fn(by_id, params)]


def render_model_html(name: str, section: dict) -> str:
    """Render a declared model's section as HTML with its ``html`` hook ("" without one)."""
    m = model(name)
    return "" if m.html is None else load(m.html)(section)


#: The report schema's version before any model declared its own ``since``.
_BASE_SCHEMA_VERSION = (1, 3)


def schema_version() -> str:
    """Return the report schema version: the newest ``since`` of a declared model (or 1.3)."""
    newest = max([_BASE_SCHEMA_VERSION] + [tuple(int(x) for x in m.since.split("."))
                                           for m in MODELS if m.since])
    return f"{newest[0]}.{newest[1]}.0"


def model(name: str) -> Model:
    """Return the declaration of model ``name`` (LookupError naming the known ones)."""
    for m in MODELS:
        if m.name == name:
            return m
    raise LookupError(f"no model {name!r}; known: {', '.join(m.name for m in MODELS)}")


def _declared_thresholds() -> Iterator[tuple[Model, Threshold]]:
    for m in MODELS:
        for t in m.thresholds:
            yield m, t


def verdict_models(thresholds: dict[str, Any]) -> list[Model]:
    """Return the declared verdict models with at least one of their thresholds given."""
    return [m for m in MODELS if m.checks is not None
            and any(thresholds.get(t.name) is not None for t in m.thresholds)]


def add_threshold_flags(group: Any, kinds: dict[str, Callable[[str], Any]]) -> None:
    """Add a CLI flag for every declared threshold to an argparse group.

    ``kinds`` maps a :attr:`Threshold.kind` to its argparse ``type`` (the CLI's validators).
    """
    for _, t in _declared_thresholds():
        group.add_argument(t.flag, dest=t.name, type=kinds[t.kind], default=t.default,
                           metavar=t.name.rsplit("_", 1)[-1].upper(), help=t.help)


def thresholds_of(args: Any) -> dict[str, Any]:
    """Return the declared thresholds' values from parsed CLI arguments (None: not given)."""
    return {t.name: getattr(args, t.name, None) for _, t in _declared_thresholds()}


def markdown_table() -> str:
    """Return the model table of ``docs/api.md``: name, question, call, reads, engines."""
    rows = ["| model | question | call | reads | sensitive | engines | verdict flags |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for m in MODELS:
        flags = ", ".join(f"`{t.flag}`" for t in m.thresholds) or "–"
        rows.append(f"| `{m.name}` | {m.question} | `{m.call}` | {m.reads} | "
                    f"{'yes' if m.sensitive else 'no'} | {', '.join(m.engines)} | {flags} |")
    return "\n".join(rows) + "\n"


#: How each engine feeds the models it is declared for (the README's engine table).
ENGINE_ROUTES = {
    "memory": "a table, a path or a Release in this process",
    "stream": "record batches with bounded memory (`Release.from_batches`, "
              "`streaming.audit_stream`, `stream_counts.row_counts`, "
              "`stream_counts.class_counts`, `class_histogram`, `population_histogram`; "
              "sorted by group: the folds `streaming.clustered_audit`, "
              "`stream_counts.robustness_audit` and `stream_counts.foreground_audit` (read "
              "three times: cells, systems, posteriors); sorted by the QI: "
              "`stream_counts.class_histogram(clustered=True)` (risk); in any order, "
              "spilled to files by a hash of the QI: `class_histogram(split_out=)` and "
              "`population_histogram(split_out=)` (risk, k-map, δ-presence))",
    "dask": "`distributed.release_from_dask`, `row_counts`, `class_counts`; the folds "
            "`groupwise_audit` (one summary per partition), `class_histogram` (risk), "
            "`population_histogram` (k-map, δ-presence, risk against a population), "
            "`robustness_audit` (r-robustness: the knowledge from the (QI, sensitive) cells, "
            "then one summary per partition of complete groups) and `foreground_audit` (the "
            "foreground attack: the mining planned from the cells, the partitions' packed "
            "systems merged and solved on the workers, block of systems by block, then one "
            "summary per partition)",
    "spark": "`spark.release`, `spark.row_counts`, `spark.class_counts`; the folds "
             "`spark.audit` (on the executors, one summary per partition), "
             "`spark.class_histogram` (risk: one row per class size), "
             "`spark.population_histogram` (k-map, δ-presence, risk against a population: "
             "one summary per partition of the join), `spark.robustness_audit` "
             "(r-robustness: the knowledge from the (QI, sensitive) cells, then one summary "
             "per partition of complete groups) and `spark.foreground_audit` (the foreground "
             "attack: the mining planned from the cells, the partitions' packed systems "
             "shuffled by block of systems, merged and solved on the executors, then one "
             "summary per partition)",
    "duckdb": "`pushdown.release`, `pushdown.row_counts`, `pushdown.class_counts` (the GROUP "
              "BY runs in DuckDB); the folds, each counting its groups or classes in buckets "
              "by a hash of the keys (`split_out`, one query a bucket: DuckDB's memory in "
              "this process does not grow with them), `pushdown.audit` (its ordered counts "
              "streamed), "
              "`pushdown.class_histogram` (risk: one row per class size), "
              "`pushdown.population_histogram` (k-map, δ-presence, risk against a "
              "population: the join streamed back), `pushdown.robustness_audit` "
              "(r-robustness: the rows streamed by group, audited run by run) and "
              "`pushdown.foreground_audit` (the foreground attack: the rows streamed by group "
              "twice, packing the systems, then attacked run by run)",
}


#: Where a release can be produced: the generalizations (lattice search, Mondrian,
#: SkylineAnonymize, the minimal (c,k)-safe search) read only the histogram of distinct
#: (QI, sensitive) cells, which every engine counts; the release is written from it
#: (:mod:`fastpriv.anonymize.out_of_core`).
ANONYMIZE_ENGINES = ("memory", "stream", "dask", "spark", "duckdb")

#: How each engine produces a release (the README's engine table, its last row).
ANONYMIZE_ROUTES = {
    "memory": "`fastpriv.anonymize.lattice_search`, `mondrian`, … then `.write`",
    "stream": "`fastpriv.anonymize.release_out_of_core` (and `fastpriv anonymize` on a large "
              "file)",
    "dask": "`distributed.anonymize`",
    "spark": "`spark.anonymize`",
    "duckdb": "`pushdown.anonymize`",
}


def engine_table() -> str:
    """Return the model × engine table of the README (✓: the engine gives the in-memory answer).

    Each ✓ is a declaration of :data:`MODELS` (the last row: :data:`ANONYMIZE_ENGINES`);
    ``tests/test_registry.py`` names, for every one, the test that compares that engine
    with the in-memory answer.
    """
    head = "| model | " + " | ".join(ENGINES) + " |"
    rows = [head, "| --- |" + " --- |" * len(ENGINES)]
    for m in MODELS:
        rows.append(f"| {m.title} | " + " | ".join("✓" if e in m.engines else "–"
                                                   for e in ENGINES) + " |")
    rows.append("| **release** (generalizations) | " + " | ".join(
        "✓" if e in ANONYMIZE_ENGINES else "–" for e in ENGINES) + " |")
    routes = "\n".join(f"- **{e}**: {ENGINE_ROUTES[e]}; release: {ANONYMIZE_ROUTES[e]}"
                       for e in ENGINES)
    return "\n".join(rows) + "\n\n" + routes + "\n"


if __name__ == "__main__":  # pragma: no cover - ``python -m fastpriv.registry [engines]``
    import sys

    print(engine_table() if sys.argv[1:] == ["engines"] else markdown_table(), end="")
