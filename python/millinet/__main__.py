"""`python -m millinet` is the `millinet` command."""

from millinet.cli import main

main()
