"""`python -m ragsift.cli`: the same command line as `ragsift` (tests and the search processes
start it this way)."""

from ragsift.cli import run

if __name__ == "__main__":
    run()
