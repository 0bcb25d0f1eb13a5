"""Loading bots the way users name them, and one-line errors when that fails."""

from __future__ import annotations

import pytest

from bots_sdk.examples import EXAMPLES, GreedyBot, get
from bots_sdk.loader import BotLoadError, load_bot_class


def test_example_names_resolve_to_their_classes():
    assert load_bot_class("random") is EXAMPLES["random"]
    assert load_bot_class("greedy") is GreedyBot
    assert get("heuristic").name == "heuristic"


def test_unknown_example_lists_the_known_ones():
    with pytest.raises(KeyError, match="greedy, heuristic, random"):
        get("nope")


def test_module_colon_class():
    assert load_bot_class("bots_sdk.examples.greedy:GreedyBot") is GreedyBot


def test_a_file_with_one_bot_class(bot_file):
    path = bot_file(
        """
        from bots_sdk import Bot
        from bots_sdk.examples import GreedyBot  # imported classes do not count

        class Mine(Bot):
            def play(self, view):
                return view.pass_turn()
        """
    )
    cls = load_bot_class(str(path))
    assert cls.__name__ == "Mine"
    assert load_bot_class(f"{path}:Mine") is cls


def test_the_bot_can_import_a_helper_next_to_it(bot_file):
    bot_file("WEAKEST = 0\n", name="helpers_for_bot.py")
    path = bot_file(
        """
        from helpers_for_bot import WEAKEST
        from bots_sdk import Bot

        class Helped(Bot):
            def play(self, view):
                return view.legal_plays()[WEAKEST]
        """
    )
    assert load_bot_class(str(path)).__name__ == "Helped"


@pytest.mark.parametrize(
    ("source", "spec_suffix", "message"),
    [
        ("x = 1\n", "", "no Bot subclass in"),
        (
            "from bots_sdk import Bot\nclass A(Bot): pass\nclass B(Bot): pass\n",
            "",
            "several Bot subclasses (A, B)",
        ),
        ("from bots_sdk import Bot\nclass A(Bot): pass\n", ":Missing", "no class 'Missing'"),
        ("def f(:\n", "", "syntax error at line 1"),
        ("import not_a_real_module_xyz\n", "", "ModuleNotFoundError: No module named"),
        ("raise RuntimeError('boom')\n", "", "failed to import: RuntimeError: boom"),
        ("class NotABot: pass\n", ":NotABot", "is not a subclass of bots_sdk.Bot"),
    ],
)
def test_bad_bot_files_get_one_line_errors(bot_file, source, spec_suffix, message):
    path = bot_file(source)
    with pytest.raises(BotLoadError) as info:
        load_bot_class(f"{path}{spec_suffix}")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_and_unknown_name():
    with pytest.raises(BotLoadError, match="bot file 'nowhere/bot.py' not found"):
        load_bot_class("nowhere/bot.py")
    with pytest.raises(BotLoadError, match="not a bot file, an importable module or an example"):
        load_bot_class("no_such_bot_name")
