"""The command line helps a person: a mistyped flag is answered with the command's own usage
and the nearest valid flag (exit status 2), and ``fastpriv --help`` ends with examples that
are the commands' own (written once, in each command's ``--help``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fastpriv.cli import HELP_EXAMPLES, _unknown_flags, audit, build_parser, main
from fastpriv.cli._common import EPILOG_HEADER, examples_of

AUDIT = ["audit", "adult", "--sensitive", "occupation", "--qi", "age", "sex"]


def _error(argv, capsys):
    """Run ``fastpriv argv``, which must stop with status 2; return its standard error."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2, argv
    out, err = capsys.readouterr()
    assert out == ""
    return err


def _commands(parser=None):
    parser = parser or build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices


# ------------------------------------------------------------------------ unknown flags
def test_unknown_flag_gives_the_commands_usage_and_the_nearest_flag(capsys):
    err = _error(AUDIT + ["--min-sise", "5"], capsys)
    assert err.startswith("usage: fastpriv audit ")        # the command's usage, not fastpriv's
    assert "COMMAND ..." not in err
    assert err.rstrip().splitlines()[-1] == (
        "fastpriv audit: error: unrecognized arguments: --min-sise 5; did you mean --min-size?")


def test_every_unknown_flag_gets_its_own_suggestion(capsys):
    err = _error(AUDIT + ["--min-sise", "5", "--max-tt", "0.2", "--zzzz"], capsys)
    assert err.rstrip().splitlines()[-1] == (
        "fastpriv audit: error: unrecognized arguments: --min-sise 5 --max-tt 0.2 --zzzz; "
        "did you mean --min-size (for --min-sise), --max-t (for --max-tt)?")


def test_no_suggestion_when_nothing_is_near(capsys):
    err = _error(AUDIT + ["--zzzz"], capsys)
    assert err.rstrip().splitlines()[-1] == "fastpriv audit: error: unrecognized arguments: --zzzz"
    assert "did you mean" not in err


def test_unknown_flag_named_when_another_error_comes_first(capsys):
    # --qi is missing: argparse stops there, before it reaches the unknown flags
    err = _error(["audit", "adult", "--min-sise", "5", "--zzzz"], capsys)
    assert err.startswith("usage: fastpriv audit ")
    last = err.rstrip().splitlines()[-1]
    assert last.startswith("fastpriv audit: error: one of the arguments --group --qi is required")
    assert last.endswith("; also unrecognized: --min-sise (did you mean --min-size?), --zzzz")


def test_a_builders_flags_are_suggested_by_the_builder(capsys):
    err = _error(["hierarchy", "masking", "adult", "--colunm", "age", "-o", "x.csv"], capsys)
    assert err.startswith("usage: fastpriv hierarchy masking ")
    assert err.rstrip().endswith("also unrecognized: --colunm (did you mean --column?)")
    err = _error(["hierarchy", "intervals", "adult", "--column", "age", "-o", "x.csv",
                  "--widht", "5"], capsys)
    assert err.startswith("usage: fastpriv hierarchy intervals ")
    assert err.rstrip().endswith("unrecognized arguments: --widht 5; did you mean --widths?")


@pytest.mark.parametrize("argv, hint", [
    (["--verison"], "unrecognized arguments: --verison; did you mean --version?"),
    (["audti", "adult"], "did you mean audit?"),
    (["warmup", "--models", "clasic"], "did you mean classic?"),
    (["robustness", "adult", "--qi", "age", "--sensitive", "occupation", "--r", "2",
      "--bucketise", "anatomy:4"], "did you mean --bucketize?"),
])
def test_nearest_flag_command_or_choice(argv, hint, capsys):
    err = _error(argv, capsys)
    assert err.rstrip().endswith(hint), err


def test_what_argparse_accepts_is_never_called_unknown():
    p = _commands()["audit"]
    argv = ["adult", "--point", "-1", "-2.5", "-.5", "-1e3",  # negative numbers
            "--json=out.json", "-", "--", "--not-a-flag"]
    assert _unknown_flags(p, argv) == []
    assert _unknown_flags(p, ["--min-sise=5", "--min-sise", "-Z"]) == ["--min-sise", "-Z"]
    r = _commands()["hierarchy"]
    masking = next(a for a in r._actions if a.dest == "builder").choices["masking"]
    assert _unknown_flags(masking, ["-ox.csv", "-o", "x.csv"]) == []   # -oFILE


def test_exit_status_of_the_console_command():
    proc = subprocess.run([sys.executable, "-m", "fastpriv", *AUDIT, "--min-sise", "5"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: fastpriv audit ")
    assert proc.stderr.rstrip().endswith("did you mean --min-size?")


def test_abbreviations_are_refused(capsys):
    # a prefix is not a flag: --min-k (renamed --min-size) must not become --min-k-map
    err = _error(AUDIT + ["--min-si", "5"], capsys)
    assert err.rstrip().endswith("unrecognized arguments: --min-si 5; did you mean --min-size?")
    err = _error(AUDIT + ["--min-k", "5"], capsys)
    assert "unrecognized arguments: --min-k 5" in err


# --------------------------------------------------------------------- fastpriv --help
def test_help_ends_with_the_commands_own_examples(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    lines = capsys.readouterr().out.rstrip().splitlines()
    commands = _commands()
    want = [examples_of(commands[name])[0] for name in HELP_EXAMPLES]
    assert len(want) >= 3 and all(e.startswith(f"fastpriv {n}")
                                  for e, n in zip(want, HELP_EXAMPLES, strict=True))
    tail = lines[-len(want) - 2:]
    assert tail[0] == "examples (each runs as written on the bundled UCI Adult data):"
    assert tail[1:-1] == [f"  {e}" for e in want]    # unwrapped: copy-paste runs them
    assert tail[-1] == "every command's --help ends with its own: fastpriv COMMAND --help"
    # audit's is its EXAMPLE constant, shown by its own --help too
    assert want[HELP_EXAMPLES.index("audit")] == audit.EXAMPLE
    assert f"  {audit.EXAMPLE}" in commands["audit"].format_help()


def test_help_examples_have_one_source(monkeypatch):
    # change the command's example: fastpriv --help follows (nothing copied)
    monkeypatch.setattr(audit, "EXAMPLE", "fastpriv audit adult --sensitive occupation "
                                          "--qi age sex race")
    parser = build_parser()
    assert "  fastpriv audit adult --sensitive occupation --qi age sex race" in \
        parser.epilog.splitlines()
    assert examples_of(_commands(parser)["audit"]) == [audit.EXAMPLE]


def test_every_command_epilog_reads_back():
    for name, p in _commands().items():
        ex = examples_of(p)
        assert p.epilog.splitlines()[0] == EPILOG_HEADER, name
        assert ex and all(e.startswith(f"fastpriv {name}") for e in ex), (name, ex)
