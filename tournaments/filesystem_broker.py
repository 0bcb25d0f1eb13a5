"""kombu's filesystem transport with messages that appear whole: the no-server broker of
`make demo` and the quick start (platform/tienlen_site/settings.py selects it).

kombu's own `_put` creates the message file and then writes it, while a consumer polling
the folder moves away any `*.<queue>.msg` it sees (it takes no lock): with the demo's worker
and beat publishing and consuming at once, a worker took a file still empty and died on
`JSONDecodeError: Expecting value` at its first tick. Here a message is written under a
name no consumer looks at and renamed into place (a rename within one folder is atomic),
so a consumer sees either no file or the whole message.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        name = f"{int(round(filesystem.monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # A leading dot and no `.msg` ending: `_get` skips it (it wants `*.<queue>.msg`).
        partial = os.path.join(self.data_folder_out, f".{uuid.uuid4().hex}.partial")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
