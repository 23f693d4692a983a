"""The message catalogue: every code in both languages with the same parameters, rendered as written."""
from __future__ import annotations

from pathlib import Path

import pytest

from service.messages import (
    LANGUAGES,
    Catalogue,
    CatalogueError,
    render,
    report_language,
    service_catalogue,
    written_language,
)

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"


def test_lists_are_joined_the_languages_way_and_numbers_keep_their_format():
    cat = Catalogue({"excess": {"zh": "在 {cases} 上多出 {excess:.3g}", "en": "on {cases}: {excess:.3g} too much"}})
    assert cat.render("excess", "zh", cases=["a", "b"], excess=0.123456) == "在 a、b 上多出 0.123"
    assert cat.render("excess", "en", cases=["a", "b"], excess=0.123456) == "on a, b: 0.123 too much"


def test_a_missing_parameter_or_code_names_itself():
    cat = Catalogue({"x": {"zh": "{n} 行", "en": "{n} rows"}})
    with pytest.raises(CatalogueError, match="'n'"):
        cat.render("x", "en")
    with pytest.raises(CatalogueError, match="'y'"):
        cat.render("y", "en")


@pytest.mark.parametrize("entries", [
    {"x": {"zh": "只有中文"}},
    {"x": {"zh": "{a}", "en": "{b}"}},
    {"x": {"zh": "{a", "en": "{a"}},
])
def test_a_catalogue_that_misses_a_language_or_disagrees_on_parameters_is_refused(entries):
    with pytest.raises(CatalogueError):
        Catalogue(entries)


def _every_catalogue() -> list[Path]:
    return [*sorted((Path(__file__).resolve().parents[2] / "service/messages").glob("*.yaml")),
            *sorted(EXERCISES.glob("*/messages.yaml"))]


@pytest.mark.parametrize("path", _every_catalogue(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_catalogue_loads_and_every_message_renders_in_both_languages(path):
    cat = Catalogue.load(path)
    for code in cat.codes:
        params = {name: 1 for name in cat.parameters(code)}
        for lang in LANGUAGES:
            assert cat.render(code, lang, **params).strip()


def test_the_service_catalogue_renders_through_the_module_function():
    assert "not_gradable" in service_catalogue()
    assert render("not_gradable", "en") != render("not_gradable", "zh")


def test_the_service_catalogue_is_every_file_under_service_messages_and_a_code_defined_twice_is_refused():
    files = sorted((Path(__file__).resolve().parents[2] / "service/messages").glob("*.yaml"))
    assert len(files) > 1
    assert service_catalogue().codes == frozenset().union(*(Catalogue.load(f).codes for f in files))
    one = Catalogue({"x": {"zh": "甲", "en": "a"}})
    with pytest.raises(CatalogueError, match="twice"):
        one.merged(Catalogue({"x": {"zh": "乙", "en": "b"}}))


def test_a_report_is_in_the_submissions_declared_language_else_the_exercises():
    assert report_language("en", "zh") == "en"
    assert report_language(None, "zh") == "zh"
    assert report_language(None, "en") == "en"
    assert report_language("fr", "en") == "en"  # not a language we write: the exercise's


def test_the_kits_own_copy_of_its_messages_is_the_catalogues():
    from service.kits import kernelgrade_kit  # runs on the grading platform, without the service: it carries a copy
    catalogue = service_catalogue()
    kit_codes = {code.removeprefix("kit.") for code in catalogue.codes if code.startswith("kit.")}
    assert kit_codes == set(kernelgrade_kit.MESSAGES)
    for code, by_language in kernelgrade_kit.MESSAGES.items():
        assert by_language == {lang: catalogue.template(f"kit.{code}", lang) for lang in LANGUAGES}


def test_report_language_follows_the_written_answers_when_none_is_declared():
    """service.messages.written_language: the grader's rule and the student page's (student_view)."""
    english = ["After centring a padding lane becomes -mean, so the mask is applied again with tl.where."]
    chinese = ["中心化后 padding lane 变成 -mean，所以要用 tl.where 重新施加 mask。"]
    assert report_language(None, "zh", english) == "en"
    assert report_language(None, "en", chinese) == "zh"
    assert report_language("zh", "zh", english) == "zh"  # declared wins
    assert report_language(None, "zh", ["", "   ", "0 < 1"]) == "zh"  # nothing written in words: the lesson's
    # code words in Chinese prose are many letters, still a minority of its characters
    assert written_language(["填 mask（cols < N）。padding lane 中心化后是 -mean，平方后是 mean^2；tl.where(mask, diff, 0.0) 把它清零。"]) == "zh"
