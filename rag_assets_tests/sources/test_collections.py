"""rag_collections.yaml and `auto`: how each document gets its parser, template and options."""

import pytest

from rag_assets.contracts.ir import DocumentElement, StandardizedDocument
from rag_assets.defs.build import llm_settings
from rag_assets.errors import ConfigurationError
from rag_assets.normalize.markdown import assemble_markdown
from rag_assets.parsers.routing import ParserRouter
from rag_assets.parsing import parse_file
from rag_assets.settings import Settings
from rag_assets.sources.collections import RuntimeChoices, load_collections, plan_document
from rag_assets.sources.template_picks import EVERY_COLLECTION, PICKS_FILE, TemplatePick, load_picks
from rag_assets.templates.registry import build_template
from rag_assets.templates.select import TemplateChoice, choose_template
from rag_assets.templates.tokens import ApproxTokenCounter
from rag_assets_tests.conftest import REPO_ROOT

YAML = """
defaults:
  options: {max_tokens: 200}
collections:
  - name: specs
    match: ["specs/**/*.pdf"]
    parser: pymupdf
    template: fixed
    options: {overlap_tokens: 10}
  - name: everything-md
    match: ["*.md"]
    template: auto
"""


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "rag_collections.yaml"
    path.write_text(YAML)
    return load_collections(path)


def test_first_matching_collection_wins_and_settings_fill_the_gaps(config):
    runtime = RuntimeChoices(
        parser="auto", template="semantic", options={"max_tokens": 256, "overlap_tokens": 32}
    )
    spec = plan_document(config, "specs/ashc/v2.pdf", runtime)
    assert (spec.collection, spec.parser, spec.template) == ("specs", "pymupdf", "fixed")
    assert spec.options == {"max_tokens": 200, "overlap_tokens": 10}
    top_level = plan_document(config, "specs/v1.pdf", runtime)  # `**/` also matches no folder
    assert top_level.collection == "specs"
    guide = plan_document(config, "guide.md", runtime)
    assert (guide.collection, guide.parser, guide.template) == ("everything-md", "auto", "auto")
    other = plan_document(config, "contracts/lease.docx", runtime)
    assert (other.collection, other.template, other.options["max_tokens"]) == (
        None,
        "semantic",
        200,
    )


def test_auto_takes_its_collections_pick_and_a_named_template_still_wins(config):
    runtime = RuntimeChoices(template="auto")
    pick = TemplatePick(
        template="qa_pairs",
        question_set="tag:collection:everything-md",
        questions=24,
        mrr=0.61,
        scores={"auto": 0.52, "qa_pairs": 0.61},
    )
    picks = {"everything-md": pick, EVERY_COLLECTION: pick.model_copy(update={"template": "fixed"})}
    guide = plan_document(config, "guide.md", runtime, picks)
    assert (guide.template, guide.picked) == ("qa_pairs", pick.reason())
    assert guide.picked.startswith("auto: picked by evaluation on 24 questions")
    assert "against auto 0.520" in guide.picked
    # The collection's own template is named: no pick replaces it.
    assert plan_document(config, "specs/v1.pdf", runtime, picks).template == "fixed"
    assert plan_document(config, "specs/v1.pdf", runtime, picks).picked is None
    # A document of no collection takes the pick made on every document's questions.
    other = plan_document(config, "contracts/lease.docx", runtime, picks)
    assert (other.template, other.picked is not None) == ("fixed", True)
    assert plan_document(config, "guide.md", runtime).template == "auto"


def test_a_broken_picks_file_is_one_clear_error(tmp_path):
    path = tmp_path / PICKS_FILE
    assert load_picks(path) == {}
    path.write_text('{"specs": {"template": "spec"}}')
    with pytest.raises(ConfigurationError, match="not a file of template picks.*delete it"):
        load_picks(path)
    path.write_text("[1, 2]")
    with pytest.raises(ConfigurationError, match="not a file of template picks"):
        load_picks(path)


def test_without_a_file_or_flag_every_document_goes_to_auto(tmp_path, monkeypatch):
    # `auto` scored best on both evaluation sets (docs/evaluation.md).
    monkeypatch.delenv("RAG_ASSETS_TEMPLATE", raising=False)
    settings = Settings.from_env(data_dir=tmp_path)
    runtime = RuntimeChoices(parser=settings.parser, template=settings.template)
    plan = plan_document(load_collections(tmp_path / "absent.yaml"), "spec.pdf", runtime)
    assert (plan.parser, plan.template) == ("auto", "auto")


def test_forced_choices_beat_the_file(config):
    runtime = RuntimeChoices(force_parser="docling", force_template="semantic")
    plan = plan_document(config, "specs/a.pdf", runtime)
    assert (plan.parser, plan.template) == ("docling", "semantic")


def test_a_missing_file_means_settings_only_and_a_broken_one_is_a_clear_error(tmp_path):
    assert load_collections(tmp_path / "absent.yaml").collections == []
    broken = tmp_path / "broken.yaml"
    broken.write_text("collections:\n  - name: x\n    globs: ['*.pdf']\n")
    with pytest.raises(ConfigurationError, match="broken.yaml"):
        load_collections(broken)


def test_options_are_validated_by_the_template(tmp_path):
    assert build_template("fixed", {"max_tokens": 64, "overlap_tokens": 8}).options.max_tokens == 64
    with pytest.raises(ConfigurationError, match="invalid options"):
        build_template("fixed", {"max_tokens": 64, "no_such_option": True})


def _doc(*texts: str, tables: int = 0, numbered: int = 0) -> StandardizedDocument:
    elements = [DocumentElement(type="paragraph", text=t) for t in texts]
    elements += [
        DocumentElement(type="heading", level=2, text=f"## {i}.1 Part") for i in range(numbered)
    ]
    elements += [DocumentElement(type="table", text="| a |\n|---|\n| 1 |") for _ in range(tables)]
    markdown, placed = assemble_markdown(elements)
    return StandardizedDocument(
        doc_id="d",
        source_path="d.md",
        source_sha256="x",
        parser="t",
        parser_version="0",
        markdown=markdown,
        elements=placed,
    )


def test_auto_reads_the_text():
    assert choose_template(
        _doc("問 A1：何時？", "答 A1：明天。", "問 A2：在哪？"), "auto"
    ).reason.startswith("auto: 2 question markers")
    assert choose_template(_doc("Q1 When?", "Tomorrow.", "Q2 Where?"), "auto").reason.startswith(
        "auto: 2 question"
    )
    clauses = choose_template(_doc("第一条 总则", "第二条 适用", "第三条 原则"), "auto")
    assert clauses.reason.startswith("auto: 3 clause markers")
    assert choose_template(
        _doc("第一条 总则", "依照本法第三十九条的规定"), "auto"
    ).reason.startswith("auto: no")
    assert choose_template(_doc("Body", tables=2, numbered=3), "auto").reason.startswith(
        "auto: 2 tables"
    )
    assert choose_template(_doc("Just prose."), "auto").template == "semantic"
    assert choose_template(_doc("問 A1：x", "問 A2：y"), "fixed") == TemplateChoice(
        "fixed", "configured"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("qa/ms_vsdocs_zhtw_unit-test-basics.md", "qa_pairs"),
        ("qa/docling_faq.md", "qa_pairs"),
        ("legal/劳动合同法(2012-12-28).md", "clauses"),
        ("legal/gdpr_eurlex_pdf_extracted.txt", "clauses"),
        ("md/docling_deployment.md", "semantic"),
        ("html/wiki_duck.html", "semantic"),
    ],
)
def test_auto_picks_the_template_real_documents_need(shared_fixtures, relative, expected):
    result = parse_file(shared_fixtures / relative, ParserRouter())
    assert choose_template(result.document, "auto").template == expected


@pytest.mark.slow
def test_auto_picks_spec_for_the_sample_specification():
    result = parse_file(REPO_ROOT / "examples/corpus/host-controller-spec.pdf", ParserRouter())
    assert choose_template(result.document, "auto").template == "spec"
    guide = parse_file(REPO_ROOT / "examples/corpus/operator-guide.md", ParserRouter())
    assert choose_template(guide.document, "auto").template == "semantic"


def test_llm_settings_come_from_the_file_under_the_environment(tmp_path, monkeypatch):
    for name in (
        "RAG_ASSETS_LLM_BASE_URL",
        "RAG_ASSETS_LLM_MODEL",
        "RAG_ASSETS_VISION_MODEL",
        "RAG_ASSETS_LLM_MAX_CALLS",
    ):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "rag_collections.yaml").write_text(
        "llm:\n  base_url: http://127.0.0.1:9/v1\n  model: file-model\n  vision_model: file-vision\n  max_calls: 5\n"
    )
    settings = Settings(data_dir=tmp_path)
    from_file = llm_settings(settings)
    assert (from_file.base_url, from_file.model, from_file.vision_model, from_file.max_calls) == (
        "http://127.0.0.1:9/v1",
        "file-model",
        "file-vision",
        5,
    )
    monkeypatch.setenv("RAG_ASSETS_LLM_MODEL", "env-model")
    overridden = llm_settings(settings)
    assert (overridden.model, overridden.vision_model) == ("env-model", "file-vision")
    (tmp_path / "rag_collections.yaml").write_text("llm:\n  api_key: sk-in-a-file\n")
    with pytest.raises(ConfigurationError, match="invalid `llm:` settings"):
        llm_settings(settings)


@pytest.mark.slow
def test_unbalanced_fence_and_hash_without_space_through_parser_and_semantic(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text(
        "# Notes\n\n#hashtag is text\n\n## Setup\n\n```bash\n# not a heading\nmake install\n"
    )
    doc = parse_file(path, ParserRouter()).document
    # min_tokens=0: each section its own chunk, however short, to see where each line went.
    rows = build_template("semantic", {"min_tokens": 0}).chunk(doc, ApproxTokenCounter())
    assert [r.headings for r in rows] == [["Notes"], ["Notes", "Setup"]]
    assert "#hashtag is text" in rows[0].text and "# not a heading" in rows[1].text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # An alias bomb of a few hundred bytes: nine aliases of nine aliases, nine levels deep.
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n"
                for a, b in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "aliases expand to more than 100,000 values",
        ),
        ("x: " + "[" * 20_000 + "]" * 20_000 + "\n", "line 1: nested deeper than 32 levels"),
        (
            "defaults:\n  template: auto\ncollections:\n  - name: a\n    match: ['*']\n    templat: x\n",
            "line 6, collections.0.templat: Extra inputs are not permitted",
        ),
        ("collections:\n  - name: a\n    match: 3\n", "line 3, collections.0.match"),
        ("collections:\n  - name: [a\n", "line 3: expected ','"),
        ("defaults: {options: {toc_pages: 1-3000000}}\ncollections: []\n", None),
    ],
)
def test_a_hostile_or_broken_collections_file_is_one_line_naming_file_line_and_key(
    tmp_path, text, message
):
    path = tmp_path / "rag_collections.yaml"
    path.write_text(text, encoding="utf-8")
    if message is None:  # valid YAML; the page range is refused where the template reads it
        options = load_collections(path).defaults.options
        with pytest.raises(ConfigurationError, match="toc_pages: page range .* goes past page"):
            build_template("spec", options)
        return
    with pytest.raises(ConfigurationError) as raised:
        load_collections(path)
    assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value)
    assert "\n" not in str(raised.value)
