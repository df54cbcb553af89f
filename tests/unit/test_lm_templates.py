"""Prompt templates render and read back; bad templates stop with one clear error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llmexplore.lm.errors import TemplateError
from llmexplore.lm.questions import QUESTION_KINDS, make_question
from llmexplore.lm.templates import PromptLibrary, Template, default_prompt_dir
from llmexplore.methods import list_methods
from llmexplore.methods.motif.questions import MotifPreference

ODD_VALUES = ["", "You kill the newt!", 'He said "Message 2: x" and left.', "{braces} and $ - 5 gold",
              "Ünïcödé ✓", "Preferred: 1", "Message 1: \"a\""]


def test_every_shipped_template_reads_back_its_fields():
    lib = PromptLibrary()
    assert {"motif_preference", "oni_classification", "ellm_goals", "housekeep_placement", "maestro_code"} <= set(lib.kinds())
    assert lib.versions("motif_preference") == ["default", "reworded"]
    for template in lib.templates():
        for value in ODD_VALUES:
            fields = {f: f"{value} <{f}>" for f in template.fields}
            text = template.render(**fields)
            assert template.parse(text) == fields, template.name
            # found inside a longer text too (a chat system prompt before it, whitespace after)
            assert template.parse("System: be brief.\n\n" + text + "\n") == fields


@pytest.mark.parametrize("text", [
    "Q: {a}\nA: {b}\nEnd.",  # starts with fixed text
    "{a} versus {b}.",  # starts with a field
    "Say {a}, then {a} again.",  # a repeated field: left to the regex's backreference
    "{a} is followed by a long fixed piece of text {b} done.",  # longer than the search probe
])
def test_the_quick_reading_agrees_with_the_regex(text):
    template = Template(text)
    values = ["", "x", "A: y", "versus", ", then", "End.", "again.", "{}", "\n",
              " is followed by a long fixed", " is followed by a long fixed piece of text", " done."]
    for a in values:
        for b in values:
            fields = {"a": a, "b": b} if "{b}" in text else {"a": a}
            rendered = template.render(**fields)
            for candidate in (rendered, rendered + " tail", "head " + rendered, rendered[:-1]):
                m = template._regex.search(candidate)
                by_regex = None
                if m is not None and template.text.format_map(m.groupdict()) == m.group(0):
                    by_regex = m.groupdict()
                assert template.parse(candidate) == by_regex, (text, candidate)


def test_rendering_is_what_str_format_gives():
    lib = PromptLibrary()
    templates = list(lib.templates()) + [Template("{{literal}} {a} }}then {b}{{.")]
    for template in templates:
        for value in ODD_VALUES + [7, 2.5]:
            fields = {f: value for f in template.fields}
            assert template.render(**fields) == template.text.format_map(fields), template.name
    with pytest.raises(TemplateError, match="needs field"):
        templates[-1].render(a="x")


def test_templates_do_not_confuse_each_other():
    lib = PromptLibrary()
    for t in lib.templates():
        text = t.render(**{f: "x" for f in t.fields})
        matches = [o.name for o in lib.templates() if o.parse(text) is not None]
        assert matches == [t.name]


def test_retry_prompt_wraps_and_unwraps():
    q = MotifPreference("gold")
    prompt = q.prompt(("You kill the newt!", "12 gold pieces."))
    retry = q.retry_prompt(prompt)
    assert q.prompts.retry.parse(retry) == {"question": prompt, "answer_format": q.answer_format}


def test_no_template_line_is_itself_a_valid_answer():
    """An echoed template must never read as an answer."""
    list_methods()  # the built-in methods register their question kinds
    lib = PromptLibrary()
    assert {t.name.split("/")[0] for t in lib.templates()} <= set(QUESTION_KINDS), "a shipped template has no question"
    for kind, cls in QUESTION_KINDS.items():
        for version in lib.versions(kind):
            kwargs = {"version": version}
            q = make_question(kind, **kwargs)
            blank = q.template.render(**{f: "" for f in q.template.fields})
            assert not q.parse(blank).ok, f"{kind}/{version} parses as an answer by itself"


def test_goal_variants_change_the_prompt():
    prompts = {g: MotifPreference(g).prompt(("a", "b")) for g in ("defaultgoal", "zeroknowledge", "combat", "gold", "stairs")}
    assert len(set(prompts.values())) == 5


@pytest.mark.parametrize("text, message", [
    ("Hello {a}{b}.", "touch"),
    ("Hello {a}", "must end with fixed text"),
    ("No fields here.", "no {field}"),
    ("Bad {a!r} x", "format spec"),
    ("Unclosed {a x", "braces"),
])
def test_bad_templates_are_rejected(text, message):
    with pytest.raises(TemplateError, match=message):
        Template(text, "t")


def test_missing_folder_and_unknown_version_name_the_fix(tmp_path: Path):
    with pytest.raises(TemplateError, match="not found"):
        PromptLibrary(tmp_path / "nope")
    with pytest.raises(TemplateError, match="versions of motif_preference: default, reworded"):
        PromptLibrary().template("motif_preference", "fancy")


def test_an_edited_copy_is_used(tmp_path: Path):
    copy = tmp_path / "prompts"
    shutil.copytree(default_prompt_dir(), copy)
    path = copy / "oni_classification" / "default.txt"
    path.write_text("Is this good news in NetHack? \"{message}\"\nEnd with Verdict: helpful or Verdict: unhelpful.\n")
    q = make_question("oni_classification", prompts=str(copy))
    assert q.prompt("You kill the newt!") == ('Is this good news in NetHack? "You kill the newt!"\n'
                                             "End with Verdict: helpful or Verdict: unhelpful.")
