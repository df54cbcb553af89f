"""A kill mid-append leaves a torn last line; nothing must glue the next row onto it (issue 49, class 3).

Before, a resumed run appended after the torn fragment, the fragment and the next row became one bad line
in the middle of the log, and every later resume stopped with a JSONDecodeError.
"""

from __future__ import annotations

import warnings

import pytest

from llmexplore.atomic import JsonlAppender, TornLineWarning, read_jsonl


def test_reopening_a_log_cuts_its_torn_tail_before_appending(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text('{"env_steps": 512}\n{"env_steps": 1024, "ret')
    with JsonlAppender(path) as log:
        log.write({"env_steps": 2048})
    assert path.read_text() == '{"env_steps": 512}\n{"env_steps": 2048}\n'


@pytest.mark.parametrize("text, kept", [("", ""), ("\n", "\n"), ('{"a": 1}\n', '{"a": 1}\n'), ('{"a": 1', "")])
def test_a_log_with_nothing_torn_or_only_a_fragment(tmp_path, text, kept):
    path = tmp_path / "log.jsonl"
    path.write_text(text)
    with JsonlAppender(path) as log:
        log.write({"b": 2})
    assert path.read_text() == kept + '{"b": 2}\n'


def test_a_torn_line_in_the_middle_is_named_and_the_row_glued_after_it_kept(tmp_path):
    """What an older version left: a fragment with the next complete row on the same line."""
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"env_steps": 512}\n{"env_steps": 10, "x": {"y"{"env_steps": 1024, "m": {"k": 1}}\n'
                    '{"env_steps": 1536, "r\n{"env_steps": 2048}\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = read_jsonl(path)
    assert rows == [{"env_steps": 512}, {"env_steps": 1024, "m": {"k": 1}}, {"env_steps": 2048}]
    messages = [str(w.message) for w in caught if issubclass(w.category, TornLineWarning)]
    assert len(messages) == 2 and "line 2" in messages[0] and "kept" in messages[0]
    assert "line 3" in messages[1] and "dropped" in messages[1]
