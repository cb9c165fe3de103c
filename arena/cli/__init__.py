"""The ``arena`` command line: a root group and one module per family of commands."""
