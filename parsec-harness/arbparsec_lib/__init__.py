"""arbparsec: the parsec-harness package (see parsec-harness/README.md)."""
