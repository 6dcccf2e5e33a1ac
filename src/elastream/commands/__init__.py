"""CLI sub-commands; each module defines `register(subparsers)` setting `handler` on its parser."""
