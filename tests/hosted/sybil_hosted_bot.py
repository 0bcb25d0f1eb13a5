"""The sybil's bot as its author submits it for hosting (bot.py of the archive, beside a
copy of tests/tournaments/memorising_bot.py): the memorising bot of the sybil audit, which
also tries every channel to its sibling accounts' bots a hosted bot could hope for — a
pooling server on the host's loopback (POOL_ADDRESS, filled in by the test), a file in
/tmp, and its own storage — and reports on its log, per game start, how many opponent
cards it predicted and what each channel gave:
`SYBIL {"start": ..., "predicted": N, "pool": "...", "stored_games": N}`."""

import json
import os
import socket

from memorising_bot import Memory, memorising_bot

POOL_ADDRESS = "127.0.0.1:0"
SHARED_FILE = "/tmp/sybil-pool.json"
STORE = os.path.join(os.environ.get("TIENLEN_STORAGE", "/tmp"), "memory.json")

memory = Memory()


def _decode(games):
    return [{int(seat): frozenset(cards) for seat, cards in g.items()} for g in games]


def _encode(games):
    return [{str(seat): sorted(cards) for seat, cards in g.items()} for g in games]


def _load_store():
    try:
        with open(STORE) as f:
            return _decode(json.load(f))
    except (OSError, ValueError):
        return []


memory.games.extend(_load_store())
STORED = len(memory.games)


def _pool(message):
    """One exchange with the pooling server: send our games, get everyone's."""
    host, port = POOL_ADDRESS.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), 1) as s:
            s.sendall(json.dumps(message).encode() + b"\n")
            data = s.makefile().readline()
        return "ok", _decode(json.loads(data))
    except OSError as exc:
        return f"{type(exc).__name__}: errno {exc.errno}", []


def _shared():
    try:
        with open(SHARED_FILE) as f:
            return _decode(json.load(f))
    except (OSError, ValueError):
        return []


class Sybil(memorising_bot(memory)):
    name = "sybil"

    def on_game_start(self, game):
        said, pooled = _pool({"games": []})
        with memory.lock:
            for known in [*pooled, *_shared()]:
                if known not in memory.games:
                    memory.games.append(known)
            before = len(memory.predictions)
        super().on_game_start(game)
        predicted = sum(len(p.cards) for p in memory.predictions[before:])
        print("SYBIL " + json.dumps({"start": f"{game.table_id}/{game.game_index}", "predicted": predicted,
                                     "pool": said, "stored_games": STORED}), flush=True)

    def on_game_end(self, result):
        super().on_game_end(result)
        with memory.lock:
            games = _encode(memory.games)
        _pool({"games": games[-1:]})
        for path in (SHARED_FILE, STORE):
            try:
                with open(path, "w") as f:
                    json.dump(games, f)
            except OSError:
                pass
