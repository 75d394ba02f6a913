"""``python -m hyperplan``: the same command line as the ``hyperplan`` console script."""

from hyperplan.cli import main

if __name__ == "__main__":
    main()
