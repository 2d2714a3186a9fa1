"""`python -m ragsift`: the same command line as the `ragsift` console script."""

from ragsift.cli import main

if __name__ == "__main__":
    main()
