"""Properties of the ``key=value`` options (``-t``, ``-o``, ``--lm``, ``-b``: ``option_input.py``) and the numbers
commands take (``number_input.py``) over generated text: whatever a user types gives its value or one clear
error (ConfigError, argparse's ArgumentTypeError, ValueError for a budget), never another exception, and the
error repeats at most a short piece of what was typed. Derandomized and bounded: seconds, the same every time."""

from __future__ import annotations

import argparse
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from llmexplore.errors import ECHO_LIMIT, ConfigError
from llmexplore.number_input import MAX_STEPS, PUBLISHED, number_type, read_steps, steps_type
from llmexplore.option_input import merge_option_pairs, parse_option_pairs, split_option_pairs

PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=300)
#: the longest error a short input may give: the message, the range it wants, one shortened echo
LONGEST_ERROR = 300

#: pieces of YAML a value may be made of: tags, dates, flow collections, anchors and aliases, comments
YAML_PIECES = ["!!float", "!!int", "!!bool", "!!timestamp", "!!str", "!!binary", "!!set", "!!null", "!!omap",
               "2001-13-45", "2024-02-30", "2001-01-01", "0x", "0b", "0o", "1e400", "-1e400", ".nan", ".inf", "nan",
               "[", "]", "{", "}", ",", ":", ": ", "#", "&a ", "*a", "'", '"', "|", ">", "-", "?", "=", " ",
               "1", "0", "1_000", "1,000", "true", "null", "x", "a=", "b.c=", "\t", "\n", "%", "@", "`", "~"]
yaml_text = st.lists(st.sampled_from(YAML_PIECES), max_size=8).map("".join)
key = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
typed = st.one_of(yaml_text, st.text(max_size=30))


@PROPERTY
@given(st.lists(st.one_of(typed, st.builds(lambda k, v: f"{k}={v}", key, typed)), max_size=4))
def test_any_option_text_gives_settings_or_one_config_error(pairs):
    try:
        parsed = parse_option_pairs(pairs)
    except ConfigError as exc:
        assert "is not of the form key=value" in exc.message or "YAML" in exc.message, exc.message
        return
    assert isinstance(parsed, dict) and all(isinstance(k, str) for k in parsed)
    merge_option_pairs({"sf_args": {"kept": 1}}, pairs)  # the nested merge takes whatever parsed


scalar = st.one_of(st.integers(-10**12, 10**12), st.booleans(),
                   st.floats(allow_nan=False, allow_infinity=False, width=64),
                   st.from_regex(r"[a-z][a-z ]{0,12}[a-z]", fullmatch=True).filter(
                       lambda s: s not in ("yes", "no", "on", "off", "true", "false", "null", "y", "n")))


def _typed(value: object) -> str:
    """How a user writes ``value`` after ``key=``."""
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, float) else str(value)


@PROPERTY
@given(st.dictionaries(key, scalar, min_size=1, max_size=5), st.booleans())
def test_key_value_pairs_read_back_as_written_repeated_or_comma_separated(values, one_argument):
    pairs = [f"{k}={_typed(v)}" for k, v in values.items()]
    parsed = parse_option_pairs([",".join(pairs)] if one_argument else pairs)
    assert parsed == values
    assert split_option_pairs([",".join(pairs)]) == pairs


@PROPERTY
@given(st.lists(key, min_size=1, max_size=3), scalar, st.dictionaries(key, scalar, max_size=3))
def test_a_dotted_key_sets_one_nested_value_and_keeps_its_siblings(path, value, siblings):
    base = {path[0]: dict(siblings)} if len(path) > 1 else {}
    merged = merge_option_pairs(base, [f"{'.'.join(path)}={_typed(value)}"])
    node = merged
    for name in path[:-1]:
        node = node[name]
    assert node[path[-1]] == value
    if len(path) > 1:
        assert {k: v for k, v in merged[path[0]].items() if k != path[1]} == {
            k: v for k, v in siblings.items() if k != path[1]}
    assert base == ({path[0]: siblings} if len(path) > 1 else {})  # the base is left as it was


number_text = st.one_of(st.text(max_size=40), st.text(alphabet="0123456789+-.eE_infaINF x", max_size=25),
                        st.integers().map(str), st.floats().map(repr), st.text(min_size=5_000, max_size=5_000,
                                                                               alphabet="9"))


@PROPERTY
@given(number_text, st.sampled_from([int, float]), st.sampled_from([(0, 65_535), (0.0, 1.0), (1, None), (None, 10)]))
def test_a_number_option_is_in_range_or_a_short_usage_error(text, kind, bounds):
    low, high = bounds
    parse = number_type(kind, low, high)
    try:
        value = parse(text)
    except argparse.ArgumentTypeError as exc:
        assert len(str(exc)) <= LONGEST_ERROR + ECHO_LIMIT, len(str(exc))
        return
    assert isinstance(value, kind) and math.isfinite(value)
    assert (low is None or value >= low) and (high is None or value <= high)


anything = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), number_text, yaml_text,
                     st.lists(st.integers(), max_size=3), st.just(PUBLISHED.upper()))


@PROPERTY
@given(anything)
def test_a_budget_is_a_whole_number_in_range_published_or_a_value_error(value):
    try:
        steps = read_steps(value)
    except ValueError as exc:
        assert "positive whole number" in str(exc) and len(str(exc)) <= LONGEST_ERROR
        return
    assert steps is None or steps == PUBLISHED or (type(steps) is int and 1 <= steps <= MAX_STEPS)
    if isinstance(value, str):
        assert steps_type(value) == steps
