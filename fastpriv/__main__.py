"""``python -m fastpriv`` runs the command-line interface."""

import sys

from .cli import main

if __name__ == "__main__":      # importing the module (e.g. doctest collection) runs nothing
    sys.exit(main())
