"""The ``arena`` command line: thin click commands over library functions that the tests call too."""

from __future__ import annotations

import platform

import click

from arena import __version__

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", message=f"arena %(version)s (Python {platform.python_version()})")
def main() -> None:
    """Run tournaments between bots that play the card game Least Score."""
