#!/usr/bin/env python
"""Django's command-line utility for the Tiến Lên platform.

`platform/` is a source root, not a package (a `platform` package would shadow the
standard library), so it is put on the import path here before Django starts.
"""

import os
import sys
from pathlib import Path


def main() -> None:
    root = Path(__file__).resolve().parent
    sys.path.insert(0, str(root / "platform"))
    sys.path.insert(0, str(root))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
