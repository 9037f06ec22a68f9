"""Hierarchy folders laid out like ARX's ``data/`` (issue 48): several data sets' files.

ARX's ``data/`` folder holds the hierarchies of three data sets (``adult_hierarchy_age.csv``,
``atus_hierarchy_age.csv``, ``ihis_hierarchy_age.csv``, …) beside the data. Only the QIs'
files are read, named exactly as the attribute is written; one data set's files are read —
``hierarchy_prefix=`` / ``--hierarchy-prefix``, else the data set named like the data file,
else the only one with a file for every QI — and a choice nothing decides is an error naming
the candidates.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

import fastpriv as fp
from fastpriv.anonymize import lattice_search
from fastpriv.anonymize.lattice import GeneralizationLattice
from fastpriv.cli import main
from fastpriv.errors import InputError
from fastpriv.hierarchies import find_hierarchy_files

ARX_DIR = os.path.join(os.path.dirname(__file__), "data", "arx")
ADULT = os.path.join(ARX_DIR, "adult.csv.gz")
QI = ["sex", "age", "race"]
#: a sex hierarchy of a different height, so that the file read shows in the lattice
SEX_3 = "Male;person;*\nFemale;person;*\n"


@pytest.fixture(scope="module")
def adult():
    return fp.read_csv(ADULT).select([*QI, "occupation"])


def _arx_data_folder(root) -> str:
    """ARX's ``data/``: the data files and three data sets' hierarchies.

    adult has a file for every attribute of ARX's Adult; atus and ihis for sex, age and race
    only, and atus's sex hierarchy has three levels (adult's and ihis's two).
    """
    d = root / "data"
    d.mkdir()
    for f in sorted(os.listdir(ARX_DIR)):
        if f.startswith("adult_hierarchy_"):
            shutil.copy(os.path.join(ARX_DIR, f), d / f)
    for ds in ("atus", "ihis"):
        for a in QI:
            shutil.copy(os.path.join(ARX_DIR, f"adult_hierarchy_{a}.csv"),
                        d / f"{ds}_hierarchy_{a}.csv")
    (d / "atus_hierarchy_sex.csv").write_text(SEX_3)
    shutil.copy(ADULT, d / "adult.csv.gz")
    (d / "atus.csv").write_text("sex;age\nMale;30\n")
    return str(d)


@pytest.fixture
def folder(tmp_path) -> str:
    return _arx_data_folder(tmp_path)


def _sex_height(lat: GeneralizationLattice) -> int:
    return lat.heights[lat.qi.index("sex")]


def test_the_data_files_name_chooses_its_data_set(folder, adult):
    found = find_hierarchy_files(folder, QI, data_name=os.path.join(folder, "adult.csv.gz"))
    assert found.dataset == "adult" and found.datasets == ("adult", "atus", "ihis")
    assert found.reason == "the data file's name"
    assert {os.path.basename(p) for p in found.files.values()} == {
        f"adult_hierarchy_{a}.csv" for a in QI}
    # the lattice reads the data file's name from its path
    lat = GeneralizationLattice(os.path.join(folder, "adult.csv.gz"), QI, None, folder)
    assert _sex_height(lat) == 2
    # the same search as on ARX's own folder
    a = lattice_search(os.path.join(folder, "adult.csv.gz"), qi=QI, hierarchies=folder,
                       min_size=5, materialize=False)
    b = lattice_search(adult, qi=QI, hierarchies=ARX_DIR, min_size=5, materialize=False)
    assert a.best == b.best and a.scores == b.scores and a.minimal == b.minimal


def test_the_only_data_set_with_every_qi_is_read(folder, adult):
    qi = ["sex", "age", "education"]      # education: adult's file only
    found = find_hierarchy_files(folder, qi)
    assert found.dataset == "adult" and found.reason.startswith("the only data set")
    t = fp.read_csv(ADULT).select(qi)
    lat = GeneralizationLattice(t, qi, None, folder)
    assert _sex_height(lat) == 2


def test_several_complete_data_sets_are_an_error_naming_them(folder, adult):
    with pytest.raises(InputError) as err:
        lattice_search(adult, qi=QI, hierarchies=folder, min_size=5)
    msg = str(err.value)
    assert "several data sets (adult, atus, ihis)" in msg
    assert "hierarchy_prefix=NAME" in msg and "--hierarchy-prefix NAME" in msg


@pytest.mark.parametrize("prefix, height", [("atus", 3), ("ihis", 2), ("adult", 2)])
def test_hierarchy_prefix_chooses(folder, adult, prefix, height):
    lat = GeneralizationLattice(adult, QI, None, folder, hierarchy_prefix=prefix)
    assert _sex_height(lat) == height
    res = lattice_search(adult, qi=QI, hierarchies=folder, hierarchy_prefix=prefix,
                         min_size=5, materialize=False)
    assert res.heights == lat.heights
    # the prefix wins over the data file's name
    found = find_hierarchy_files(folder, QI, prefix=prefix, data_name="adult.csv")
    assert found.dataset == prefix and found.reason == "hierarchy_prefix"


def test_unknown_prefix_and_prefix_without_a_folder_are_refused(folder, adult):
    with pytest.raises(InputError, match=r"hierarchy_prefix: .* no census_hierarchy_"
                                         r"<attribute>\.csv file .*data sets there: "
                                         r"adult, atus, ihis"):
        lattice_search(adult, qi=QI, hierarchies=folder, hierarchy_prefix="census",
                       min_size=5)
    with pytest.raises(InputError, match="hierarchy_prefix chooses the data set of a "
                                         "hierarchies= folder"):
        lattice_search(adult, qi=["age"], hierarchies={"age": [10, "*"]},
                       hierarchy_prefix="adult", min_size=5)


def test_names_are_matched_exactly_as_written(tmp_path):
    d = tmp_path / "h"
    d.mkdir()
    (d / "age.csv").write_text("1;*\n2;*\n")
    (d / "AGE.csv").write_text("1;low;*\n2;low;*\n")
    (d / "Sex.csv").write_text("M;*\nF;*\n")
    got = find_hierarchy_files(d, ["age", "AGE"]).files
    assert os.path.basename(got["age"]) == "age.csv"
    assert os.path.basename(got["AGE"]) == "AGE.csv"
    with pytest.raises(InputError) as err:
        find_hierarchy_files(d, ["sex"])
    assert "no file for QI 'sex'" in str(err.value)
    assert "names are matched exactly as written (Sex.csv spell" in str(err.value)


def test_two_files_for_one_column_name_both(tmp_path):
    d = tmp_path / "h"
    d.mkdir()
    (d / "age.csv").write_text("1;*\n2;*\n")
    (d / "adult_hierarchy_age.csv").write_text("1;low;*\n2;low;*\n")
    with pytest.raises(InputError) as err:
        find_hierarchy_files(d, ["age"])
    msg = str(err.value)
    assert "two files in" in msg and "for QI 'age'" in msg
    assert "adult_hierarchy_age.csv and age.csv" in msg
    assert "hierarchy_prefix='adult'" in msg
    # the prefix decides
    got = find_hierarchy_files(d, ["age"], prefix="adult").files["age"]
    assert os.path.basename(got) == "adult_hierarchy_age.csv"
    # so does nothing else: the data set named like the data file is still two candidates
    with pytest.raises(InputError, match="two files"):
        find_hierarchy_files(d, ["age"], data_name="adult.csv")
    (d / "adult_hierarchy_age.csv").unlink()
    (d / "age.txt").write_text("1;*\n2;*\n")
    with pytest.raises(InputError, match=r"age\.csv and age\.txt"):
        find_hierarchy_files(d, ["age"])


def test_a_data_set_without_a_qis_file_reads_the_plain_file(tmp_path):
    d = tmp_path / "h"
    d.mkdir()
    (d / "adult_hierarchy_sex.csv").write_text("M;*\nF;*\n")
    (d / "age.csv").write_text("1;*\n2;*\n")
    (d / "atus_hierarchy_race.csv").write_text("a;*\n")     # another data set, not a QI
    found = find_hierarchy_files(d, ["sex", "age"])
    assert found.dataset == "adult"
    assert {a: os.path.basename(p) for a, p in found.files.items()} == {
        "sex": "adult_hierarchy_sex.csv", "age": "age.csv"}


def test_missing_file_names_other_data_sets_files(tmp_path):
    d = tmp_path / "h"
    d.mkdir()
    (d / "adult_hierarchy_sex.csv").write_text("M;*\nF;*\n")
    (d / "atus_hierarchy_age.csv").write_text("1;*\n")
    with pytest.raises(InputError) as err:
        find_hierarchy_files(d, ["sex", "age"], prefix="adult")
    assert "no file for QI 'age'" in str(err.value)
    assert "other data sets' files for it: atus_hierarchy_age.csv" in str(err.value)


def test_cli_reads_arx_data_folder_by_the_data_files_name(folder, tmp_path, capsys):
    out, js = tmp_path / "out.csv", tmp_path / "s.json"
    rc = main(["anonymize", os.path.join(folder, "adult.csv.gz"), "--qi", *QI,
               "--min-size", "5", "--hierarchies", folder, "-o", str(out), "--json", str(js)])
    err = capsys.readouterr().err
    assert rc == 0 and out.exists()
    assert ("--hierarchies holds the files of adult, atus, ihis: reading adult's (the data "
            "file's name)") in err
    want = lattice_search(fp.read_csv(ADULT), qi=QI, hierarchies=ARX_DIR, min_size=5)
    assert json.loads(js.read_text())["node"] == list(want.best)


def test_cli_several_data_sets_exit_2_then_prefix(folder, tmp_path, capsys):
    data = tmp_path / "mydata.csv.gz"
    shutil.copy(ADULT, data)
    out = tmp_path / "out.parquet"
    argv = ["anonymize", str(data), "--qi", *QI, "--min-size", "5", "--hierarchies", folder,
            "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "several data sets (adult, atus, ihis)" in err and "--hierarchy-prefix" in err
    assert not out.exists()
    js = tmp_path / "s.json"
    assert main([*argv, "--hierarchy-prefix", "atus", "--json", str(js)]) == 0
    assert "reading atus's (hierarchy_prefix)" in capsys.readouterr().err
    levels = json.loads(js.read_text())["levels"]
    want = lattice_search(fp.read_csv(ADULT), qi=QI, hierarchies=folder,
                          hierarchy_prefix="atus", min_size=5)
    assert levels == dict(want.anonymized.levels)


def test_cli_hierarchy_prefix_needs_hierarchies(tmp_path, capsys):
    rc = main(["anonymize", "adult", "--qi", "age", "sex", "--min-size", "5",
               "--hierarchy-prefix", "adult", "-o", str(tmp_path / "o.parquet")])
    assert rc == 2
    assert "--hierarchy-prefix chooses the data set of a --hierarchies folder" in \
        capsys.readouterr().err


def test_cli_two_files_for_one_column_exit_2(tmp_path, capsys):
    d = tmp_path / "h"
    d.mkdir()
    (d / "sex.csv").write_text("Male;*\nFemale;*\n")
    (d / "adult_hierarchy_sex.csv").write_text("Male;*\nFemale;*\n")
    data = tmp_path / "d.csv"
    data.write_text("sex,s\n" + "Male,x\nFemale,y\n" * 4)
    rc = main(["anonymize", str(data), "--qi", "sex", "--min-size", "2", "--hierarchies",
               str(d), "-o", str(tmp_path / "o.parquet")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "adult_hierarchy_sex.csv and sex.csv" in err
