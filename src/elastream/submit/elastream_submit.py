"""spark-submit's entry point: `spark-submit [SPARK OPTIONS] elastream_submit.py COMMAND ...`
runs `elastream COMMAND ...` in the driver spark-submit started (docs/deploy.md). This folder
holds nothing else, so nothing here shadows a module when Python puts it on sys.path."""

from elastream.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
