"""`python -m ragsift`: the same command line as the `ragsift` console script."""

from ragsift.cli import run

if __name__ == "__main__":
    run()
