"""``python -m fastpriv`` runs the command-line interface."""

from .cli import console

if __name__ == "__main__":      # importing the module (e.g. doctest collection) runs nothing
    console()
