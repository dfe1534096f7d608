"""``python -m lmms_eval`` runs the command-line interface."""

from lmms_eval.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
