"""Runs inside a hosted Python bot's sandbox (copied into the Python runtime when it is
built; tournaments/hosting/runtimes.py): loads the runtime's own packages, tells the runner
that the runtime is up, then hands over to the SDK's own command line, so a hosted bot runs
exactly as `tienlen-bot run bot.py` runs on its author's machine.

The line written to TIENLEN_STATUS_FD is the boundary between the platform's fault and the
bot's: everything before it (the sandbox, the interpreter, grpc, the SDK) is the platform's;
from the next line on the bot's own code runs. The descriptor is closed before, so the bot
cannot write to it. Standard library and the SDK only.
"""

import os
import sys


def main() -> int:
    import grpc  # noqa: F401  (the runtime's packages: failing here is the platform's fault)

    import bots_sdk.cli
    import bots_sdk.client
    import bots_sdk.runner

    fd = os.environ.pop("TIENLEN_STATUS_FD", "")
    if fd.isdigit():
        os.write(int(fd), b"started\n")
        os.close(int(fd))
    return bots_sdk.cli.main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
