"""``python -m ragspan``: the same as the ``ragspan`` console script."""

from ragspan.cli import main

main()
