"""Every public module of fastpriv is an attribute of the package, imported on first use.

``import fastpriv as fp; fp.population`` must work without ``import fastpriv.population``.
Each check runs in a fresh interpreter: in the test process another test has usually
imported the module already, and importing a submodule binds it on the package, which would
hide a module the package's lazy ``__getattr__`` does not know.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import fastpriv


def _public_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(fastpriv.__path__)
                  if not m.name.startswith("_"))


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_modules_on_disk_are_found():
    names = _public_modules()
    assert {"population", "risk", "registry", "classic", "anonymize", "report"} <= set(names)


def test_every_public_module_is_a_lazy_attribute_of_the_package():
    names = _public_modules()
    code = (
        "import json, sys\n"
        "import fastpriv as fp\n"
        f"names = {names!r}\n"
        "eager = sorted(n for n in names if 'fastpriv.' + n in sys.modules)\n"
        "listed = sorted(n for n in names if n in fp.__all__ and n in dir(fp))\n"
        "ok, bad = [], {}\n"
        "for n in names:\n"
        "    try:\n"
        "        mod = getattr(fp, n)\n"
        "    except AttributeError as exc:\n"
        "        bad[n] = str(exc)\n"
        "        continue\n"
        "    if mod is sys.modules.get('fastpriv.' + n):\n"
        "        ok.append(n)\n"
        "    else:\n"
        "        bad[n] = repr(mod)\n"
        "print(json.dumps({'eager': eager, 'listed': listed, 'ok': ok, 'bad': bad}))\n")
    got = _fresh(code)
    assert got["bad"] == {}, f"fastpriv.<name> fails for {got['bad']}"
    assert got["ok"] == names
    assert got["listed"] == names, "every public module is in fastpriv.__all__ and dir()"
    # ``import fastpriv`` stays light: the modules are imported only when asked for
    # (errors is the one the package imports for InputError)
    assert got["eager"] == ["errors"]


def test_an_unknown_attribute_is_still_an_attribute_error():
    got = _fresh("import json, fastpriv as fp\n"
                 "try:\n"
                 "    fp.no_such_module\n"
                 "    print(json.dumps({'raised': False}))\n"
                 "except AttributeError as exc:\n"
                 "    print(json.dumps({'raised': True, 'msg': str(exc)}))\n")
    assert got == {"raised": True, "msg": "module 'fastpriv' has no attribute 'no_such_module'"}
