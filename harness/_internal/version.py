"""The package's version, kept below everything that reports it (the facade, the commands, reports)."""

VERSION = "0.1.0"
