"""The Milvus index on a real Milvus Lite file in tmp_path, with the real bundled model."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rag_assets.contracts.chunk import ChunkRow, chunk_id_for
from rag_assets.embedding.models import Embedder, EmbeddingSpec, load_embedder
from rag_assets.errors import ConfigurationError
from rag_assets.index import lite
from rag_assets.index.filters import quote
from rag_assets.index.lite import IndexUnavailableError
from rag_assets.index.rows import IndexRow
from rag_assets.index.schema import OutdatedCollectionError
from rag_assets.index.store import MilvusIndex

SPEC_DOC = "specs/host-controller.pdf"
MANUAL_DOC = 'manual "B" \\ it\'s.docx'  # quotes and a backslash must survive filters
CORPUS = {
    SPEC_DOC: [
        "The Host Control Register at offset 0x04 enables interrupts and DMA transfers.",
        "Error code ZX-4471 indicates that the firmware checksum did not match.",
        "Cats are small domesticated carnivorous mammals often kept as pets.",
    ],
    MANUAL_DOC: [
        "Tenants must give thirty days written notice before ending the lease.",
        "Solar panels convert sunlight into electricity using photovoltaic cells.",
    ],
}


def make_rows(embedder: Embedder, doc_id: str, texts: list[str]) -> list[IndexRow]:
    chunks = [
        ChunkRow(
            chunk_id=chunk_id_for(doc_id, "semantic", i, text),
            doc_id=doc_id,
            source_path=f"inbox/{doc_id}",
            source_sha256="0" * 64,
            template="semantic",
            chunk_index=i,
            text=text,
            header_path="/Intro/",
            headings=["Intro", f"Part {i}"],
            page_start=i + 1,
            page_end=i + 1,
            metadata={"section_type": "body"},
        )
        for i, text in enumerate(texts)
    ]
    batch = embedder.encode_documents(texts)
    return [IndexRow.from_chunk(c, v) for c, v in zip(chunks, batch.dense, strict=True)]


@pytest.fixture(scope="module")
def db_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("index") / "milvus.db")


@pytest.fixture(scope="module")
def index(db_uri: str) -> Iterator[MilvusIndex]:
    with MilvusIndex(db_uri) as opened:
        yield opened


@pytest.fixture(scope="module")
def corpus(index: MilvusIndex, embedder: Embedder) -> str:
    """The model's collection holding CORPUS; tests must not change it."""
    collection = index.ensure_collection(embedder.name, embedder.dimension, embedder.has_sparse)
    for doc_id, texts in CORPUS.items():
        index.replace_document(collection, doc_id, make_rows(embedder, doc_id, texts))
    return collection


@pytest.fixture(scope="module")
def scratch(index: MilvusIndex, embedder: Embedder) -> str:
    """A collection for tests that write; each uses document ids of its own."""
    return index.ensure_collection("scratch-model", embedder.dimension, False)


@pytest.fixture()
def docs(request: pytest.FixtureRequest) -> tuple[str, str]:
    """Two document ids for this test only, the second with quotes and a backslash."""
    return f"{request.node.name}/spec.pdf", f'{request.node.name}/manual "B" \\ it\'s.docx'


def test_collection_is_named_and_listed(index: MilvusIndex, corpus: str) -> None:
    assert corpus == "rag_chunks__all_minilm_l6_v2__384"
    assert index.collection_name("BAAI/bge-m3", 1024) == "rag_chunks__baai_bge_m3__1024"
    long_name = index.collection_name("x" * 400, 384)
    assert len(long_name) <= 255 and long_name.endswith("__384")
    assert corpus in index.list_collections()


def test_replace_twice_leaves_one_row_per_chunk(
    index: MilvusIndex, embedder: Embedder, scratch: str, docs: tuple[str, str]
) -> None:
    spec, _ = docs
    rows = make_rows(embedder, spec, CORPUS[SPEC_DOC])
    first = index.replace_document(scratch, spec, rows)
    second = index.replace_document(scratch, spec, rows)
    assert (first.upserted, first.deleted, first.row_count) == (3, 0, 3)
    assert (second.upserted, second.deleted, second.row_count) == (3, 0, 3)
    assert index.count_document(scratch, spec) == 3


def test_replace_with_fewer_chunks_removes_stale_rows_only_of_that_document(
    index: MilvusIndex, embedder: Embedder, scratch: str, docs: tuple[str, str]
) -> None:
    spec, manual = docs
    index.replace_document(scratch, spec, make_rows(embedder, spec, CORPUS[SPEC_DOC]))
    other = make_rows(embedder, manual, CORPUS[MANUAL_DOC])
    index.replace_document(scratch, manual, other)

    edited = ["The Host Control Register at offset 0x08 enables interrupts.", CORPUS[SPEC_DOC][1]]
    new_rows = make_rows(embedder, spec, edited)
    result = index.replace_document(scratch, spec, new_rows)
    assert (result.upserted, result.deleted, result.row_count) == (2, 2, 2)

    hits = index.dense_search(scratch, new_rows[0].dense, top_k=10, doc_id=spec)
    assert {h.chunk_id for h in hits} == {r.chunk_id for r in new_rows}
    assert index.count_document(scratch, manual) == len(other)

    assert index.replace_document(scratch, spec, []).row_count == 0
    assert index.count_document(scratch, manual) == len(other)


def test_delete_document(
    index: MilvusIndex, embedder: Embedder, scratch: str, docs: tuple[str, str]
) -> None:
    spec, manual = docs
    index.replace_document(scratch, manual, make_rows(embedder, manual, CORPUS[MANUAL_DOC]))
    index.replace_document(scratch, spec, make_rows(embedder, spec, CORPUS[SPEC_DOC]))
    assert index.delete_document(scratch, manual) == 2
    assert index.count_document(scratch, manual) == 0
    assert index.count_document(scratch, spec) == 3
    assert index.delete_document(scratch, manual) == 0


def test_rows_of_another_document_are_refused(
    index: MilvusIndex, embedder: Embedder, scratch: str, docs: tuple[str, str]
) -> None:
    spec, manual = docs
    rows = make_rows(embedder, spec, CORPUS[SPEC_DOC][:1])
    with pytest.raises(ValueError, match="belongs to"):
        index.replace_document(scratch, manual, rows)


def test_dense_index_is_flat(index: MilvusIndex, corpus: str) -> None:
    # Exact search: HNSW and IVF lost recall beside a document of identical vectors
    # (bench/dense_index_types.py).
    assert index._client.describe_index(corpus, "dense")["index_type"] == "FLAT"


def test_dense_ranks_by_cosine_whatever_the_vector_lengths(tmp_path: Path) -> None:
    # The index ranks by inner product (faster in Milvus Lite) over vectors normalized on the
    # way in and out: the ids and scores must be the cosine ranking of the raw vectors.
    rng = np.random.default_rng(11)
    raw = rng.standard_normal((200, 16)) * rng.uniform(0.01, 50.0, size=(200, 1))
    queries = rng.standard_normal((8, 16)) * rng.uniform(0.01, 50.0, size=(8, 1))
    rows = [
        IndexRow(chunk_id=f"c{i:03d}", doc_id="d", text=f"row {i}", dense=v)
        for i, v in enumerate(raw)
    ]
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    with MilvusIndex(str(tmp_path / "cosine.db")) as index:
        collection = index.ensure_collection("cosine-check", 16, False)
        index.replace_document(collection, "d", rows)
        for query in queries:
            cosines = unit @ (query / np.linalg.norm(query))
            expected = np.argsort(-cosines)[:10]
            ranked = index.ranked_ids(collection, "dense", query, 10)
            assert [r.chunk_id for r in ranked] == [f"c{i:03d}" for i in expected]
            assert [r.score for r in ranked] == pytest.approx(cosines[expected], abs=1e-5)
            hits = index.dense_search(collection, query, 10)
            assert [h.chunk_id for h in hits] == [r.chunk_id for r in ranked]


def test_each_chunk_finds_itself_top1(index: MilvusIndex, embedder: Embedder, corpus: str) -> None:
    for doc_id, texts in CORPUS.items():
        for row in make_rows(embedder, doc_id, texts):
            top = index.dense_search(corpus, row.dense, top_k=1)[0]
            assert top.chunk_id == row.chunk_id
            assert top.score == pytest.approx(1.0, abs=1e-4)


def test_hits_carry_citation_fields(index: MilvusIndex, embedder: Embedder, corpus: str) -> None:
    row = make_rows(embedder, MANUAL_DOC, CORPUS[MANUAL_DOC])[1]
    hit = index.dense_search(corpus, row.dense, top_k=1, doc_id=MANUAL_DOC)[0]
    assert (hit.doc_id, hit.source_path, hit.header_path) == (
        MANUAL_DOC,
        f"inbox/{MANUAL_DOC}",
        "/Intro/",
    )
    assert (hit.page_start, hit.page_end, hit.chunk_index) == (2, 2, 1)
    assert (hit.chunk_type, hit.template, hit.text) == ("text", "semantic", CORPUS[MANUAL_DOC][1])
    assert hit.metadata["section_type"] == "body"
    assert hit.metadata["headings"] == ["Intro", "Part 1"]


def test_bm25_finds_a_keyword_and_honours_a_filter(index: MilvusIndex, corpus: str) -> None:
    hits = index.bm25_search(corpus, "ZX-4471", top_k=3)
    assert [h.text for h in hits] == [CORPUS[SPEC_DOC][1]]  # no other row has either token
    assert index.bm25_search(corpus, "ZX-4471", 3, expr=f"doc_id == {quote(MANUAL_DOC)}") == []
    assert index.bm25_search(corpus, "   ", top_k=3) == []


def test_bm25_matches_the_context_not_only_the_text(
    index: MilvusIndex, embedder: Embedder, scratch: str, docs: tuple[str, str]
) -> None:
    spec, _ = docs
    rows = make_rows(embedder, spec, CORPUS[SPEC_DOC])
    rows[2] = rows[2].model_copy(update={"context_text": f"Zoology appendix\n{rows[2].text}"})
    index.replace_document(scratch, spec, rows)
    hits = index.bm25_search(scratch, "zoology", 3, expr=f"doc_id == {quote(spec)}")
    assert [h.chunk_id for h in hits] == [rows[2].chunk_id]
    assert hits[0].text == CORPUS[SPEC_DOC][2]  # the display text stays without the breadcrumb


def test_dense_finds_a_paraphrase(index: MilvusIndex, embedder: Embedder, corpus: str) -> None:
    query = "feline companions living indoors"  # no word shared with any chunk
    vector = embedder.encode_queries([query]).dense[0]
    assert index.dense_search(corpus, vector, top_k=1)[0].text == CORPUS[SPEC_DOC][2]
    in_manual = index.dense_search(corpus, vector, top_k=3, doc_id=MANUAL_DOC)
    assert {h.doc_id for h in in_manual} == {MANUAL_DOC}


def test_ranked_ids_carry_only_the_fields_asked_for(
    index: MilvusIndex, embedder: Embedder, corpus: str
) -> None:
    vector = embedder.encode_queries(["feline companions living indoors"]).dense[0]
    full = index.dense_search(corpus, vector, top_k=4)
    ranked = index.ranked_ids(corpus, "dense", vector, 4)
    assert [(r.chunk_id, r.score) for r in ranked] == [(h.chunk_id, h.score) for h in full]
    assert {len(r.fields) for r in ranked} == {0}
    (bm25,) = index.ranked_ids(corpus, "bm25", "ZX-4471", 3, fields=("source_path",))
    assert bm25.fields == {"source_path": f"inbox/{SPEC_DOC}"}
    assert index.ranked_ids(corpus, "bm25", "   ", 3) == []
    rows = index.rows_for_hits(corpus, [h.chunk_id for h in full[:2]])
    assert rows == {h.chunk_id: h.model_dump(exclude={"score"}) for h in full[:2]}
    assert index.rows_for_hits(corpus, []) == {}
    # A chunk deleted since the search is left out, not an error.
    assert list(index.rows_for_hits(corpus, ["no-such-chunk", full[0].chunk_id])) == [
        full[0].chunk_id
    ]


def test_reuse_for_another_model_is_refused(index: MilvusIndex, corpus: str) -> None:
    with pytest.raises(ConfigurationError, match="all_minilm_l6_v2"):
        index.ensure_collection("all_minilm_l6_v2", 384, False)  # same slug, other model
    with pytest.raises(ConfigurationError, match="rag.has_sparse"):
        index.ensure_collection("all-MiniLM-L6-v2", 384, True)


def test_opening_a_collection_reads_its_description_once(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "reopened.db")
    spec = (embedder.name, embedder.dimension, embedder.has_sparse)
    with MilvusIndex(uri) as index:
        made = index.ensure_collection(*spec)
    with MilvusIndex(uri) as index:
        client = index._client
        described: list[str] = []
        describe = client.describe_collection

        def counted(name: str) -> dict:
            described.append(name)
            return describe(name)

        monkeypatch.setattr(client, "describe_collection", counted)
        assert index.open_collection(*spec) == made
        assert index.dense_search(made, [0.1] * embedder.dimension, top_k=1) == []
        # The check on opening and the load share one read of the description.
        assert described == [made]


def test_an_old_schema_collection_is_reported_not_mixed(tmp_path: Path, embedder: Embedder) -> None:
    from pymilvus import MilvusClient

    uri = str(tmp_path / "old.db")
    with MilvusIndex(uri) as index:
        name = index.collection_name(embedder.name, embedder.dimension)
    # What schema version 1 left: the same name, no version property.
    old = MilvusClient(uri)
    old.create_collection(name, dimension=embedder.dimension)
    old.close()
    with MilvusIndex(uri) as index:
        for attempt in (
            lambda: index.ensure_collection(embedder.name, embedder.dimension, False),
            lambda: index.dense_search(name, [0.1] * embedder.dimension, top_k=1),
            lambda: index.count_document(name, SPEC_DOC),
        ):
            with pytest.raises(OutdatedCollectionError, match="older schema.*Re-index"):
                attempt()


def test_a_second_index_on_the_same_file_shares_it(db_uri: str, corpus: str) -> None:
    with MilvusIndex(db_uri) as second:
        assert second.count_document(corpus, SPEC_DOC) == 3
    with MilvusIndex(db_uri) as third:  # closing the second left the file open for the first
        assert corpus in third.list_collections()


def test_reopen_after_close_loads_and_searches(tmp_path: Path, embedder: Embedder) -> None:
    uri = str(tmp_path / "milvus.db")
    rows = make_rows(embedder, SPEC_DOC, CORPUS[SPEC_DOC])
    with MilvusIndex(uri) as first:
        collection = first.ensure_collection(embedder.name, embedder.dimension, False)
        first.replace_document(collection, SPEC_DOC, rows)

    # close() released the file: another process can open it now.
    probe = f"from pymilvus import MilvusClient; print(MilvusClient({uri!r}).list_collections())"
    child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert child.returncode == 0 and collection in child.stdout

    with MilvusIndex(uri) as reopened:
        assert reopened.count_document(collection, SPEC_DOC) == 3
        assert (
            reopened.dense_search(collection, rows[2].dense, top_k=1)[0].chunk_id
            == rows[2].chunk_id
        )


def test_a_file_held_by_another_process_gives_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "held.db")
    holder = (
        "from pymilvus import MilvusClient; MilvusClient({!r}); print('ready', flush=True); input()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", holder.format(uri)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        monkeypatch.setattr(lite, "OPEN_DELAYS", (0.1, 0.1))  # the real backoff takes ~10 s
        with pytest.raises(IndexUnavailableError, match="held.db.*another process"):
            MilvusIndex(uri)
    finally:
        child.communicate("\n", timeout=30)


def test_an_engine_not_listening_yet_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a busy machine the engine's socket may not exist when the client first connects;
    # pymilvus then raises its "Fail connecting to server", which a later attempt outlives.
    from pymilvus import MilvusClient
    from pymilvus.client.types import Status
    from pymilvus.exceptions import MilvusException

    attempts = []

    def not_yet(*args: object, **kwargs: object) -> MilvusClient:
        attempts.append(args)
        if len(attempts) == 1:
            raise MilvusException(code=Status.CONNECT_FAILED, message="Fail connecting to server")
        return MilvusClient(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("pymilvus.MilvusClient", not_yet)
    monkeypatch.setattr(lite, "OPEN_DELAYS", (0.1, 0.1))
    with MilvusIndex(str(tmp_path / "late.db")) as index:
        assert index.list_collections() == []
    assert len(attempts) == 2

    def broken(*args: object, **kwargs: object) -> MilvusClient:
        raise MilvusException(code=1, message="unexpected")

    monkeypatch.setattr("pymilvus.MilvusClient", broken)
    with pytest.raises(MilvusException, match="unexpected"):
        MilvusIndex(str(tmp_path / "other.db"))


def test_bge_m3_rows_with_learned_sparse_weights(index: MilvusIndex) -> None:
    # The BGE-M3 code path on the bundled folder: real shapes and types, random sparse head.
    m3 = load_embedder(EmbeddingSpec(kind="bge-m3"))
    collection = index.ensure_collection("test-bge-m3-path", m3.dimension, m3.has_sparse)
    texts = CORPUS[SPEC_DOC]
    batch = m3.encode_documents(texts)
    rows = make_rows(m3, SPEC_DOC, texts)
    assert batch.sparse is not None
    for row, weights in zip(rows, batch.sparse, strict=True):
        row.sparse_learned = weights
    rows[1].sparse_learned, rows[2].sparse_learned = {}, None  # a chunk with no positive weight
    assert index.replace_document(collection, SPEC_DOC, rows).row_count == 3

    query = m3.encode_queries([texts[0]])
    assert query.sparse is not None and index.has_sparse(collection)
    hits = index.sparse_search(collection, query.sparse[0], top_k=3)
    assert hits[0].chunk_id == rows[0].chunk_id  # the same text gives the same weights
    assert rows[1].chunk_id not in {h.chunk_id for h in hits}  # the placeholder matches nothing


MIXED = [
    "机器学习是人工智能的一个重要分支。",
    "今天天气很好，我们去公园散步。",
    "使用 DMA 传输时，必须先配置 Host Control Register。",
]


def test_default_analyzer_splits_chinese_and_english_in_one_collection(
    index: MilvusIndex, embedder: Embedder, scratch: str, docs: tuple[str, str]
) -> None:
    spec, _ = docs
    rows = make_rows(embedder, spec, [*MIXED, *CORPUS[SPEC_DOC]])
    assert [r.language for r in rows] == ["zh", "zh", "zh", "en", "en", "en"]
    index.replace_document(scratch, spec, rows)
    within = f"doc_id == {quote(spec)}"
    for query, expected in [
        ("人工智能", MIXED[0]),
        ("公园散步", MIXED[1]),
        ("dma 传输", MIXED[2]),
        ("host control register", MIXED[2]),  # case folded in Chinese rows too
        ("firmware checksum", CORPUS[SPEC_DOC][1]),
    ]:
        hits = index.bm25_search(scratch, query, 3, expr=within)
        assert hits and hits[0].text == expected, query
    assert {h.language for h in index.bm25_search(scratch, "人工智能", 1, expr=within)} == {"zh"}


def test_standard_analyzer_cannot_split_chinese(db_uri: str, embedder: Embedder) -> None:
    # Why jieba is the default: `standard` keeps a Chinese sentence as one token.
    with MilvusIndex(db_uri, collection_prefix="rag_std", text_analyzer="standard") as std:
        collection = std.ensure_collection(embedder.name, embedder.dimension, False)
        std.replace_document(collection, "zh-doc", make_rows(embedder, "zh-doc", MIXED))
        assert std.bm25_search(collection, "人工智能", top_k=2) == []
        assert std.bm25_search(collection, "DMA", top_k=2)[0].text == MIXED[2]


FILING_ROWS = ["Total liabilities and shareholders' equity", "Segments of the business"]


@pytest.mark.parametrize(
    ("text_analyzer", "english_analyzer", "stems"),
    [("jieba", "none", False), ("jieba", "jieba-english", True), ("jieba-english", "none", True)],
)
def test_the_english_analyzer_matches_a_words_forms(
    db_uri: str, embedder: Embedder, text_analyzer: str, english_analyzer: str, stems: bool
) -> None:
    prefix = f"{text_analyzer}__{english_analyzer}".replace("-", "_")
    with MilvusIndex(
        db_uri,
        collection_prefix=prefix,
        text_analyzer=text_analyzer,
        english_analyzer=english_analyzer,
    ) as index:
        collection = index.ensure_collection(embedder.name, embedder.dimension, False)
        index.replace_document(collection, "filing", make_rows(embedder, "filing", FILING_ROWS))
        assert index.has_english_field(collection) == (english_analyzer != "none")
        # Lowercased alone, `the` is what matches: the other row holds it.
        for query, row in [("the largest liability", FILING_ROWS[0]), ("segment", FILING_ROWS[1])]:
            hits = index.bm25_search(collection, query, top_k=2)
            top = hits[0].text if hits else None
            assert (top == row) == stems, (text_analyzer, english_analyzer, query)


def test_the_questions_language_chooses_the_analyzer(db_uri: str, embedder: Embedder) -> None:
    with MilvusIndex(db_uri, collection_prefix="by_language") as index:
        collection = index.ensure_collection(embedder.name, embedder.dimension, False)
        rows = [*FILING_ROWS, "负债总额与股东权益"]
        index.replace_document(collection, "filing", make_rows(embedder, "filing", rows))

        def top(query: str, language: str | None = None) -> str:
            return index.bm25_search(collection, query, 3, language=language)[0].text

        # English: stemmed, stop words dropped; told another language, the text analyzer's
        # exact forms, where only `the` matches.
        assert top("the largest liability") == FILING_ROWS[0]
        assert top("the largest liability", language="zh") == FILING_ROWS[1]
        assert top("负债总额") == rows[2]
        ranked = index.ranked_ids(collection, "bm25", "the largest liability", 2, language="zh")
        assert [r.chunk_id for r in ranked][0] == index.bm25_search(
            collection, "the largest liability", 1, language="zh"
        )[0].chunk_id


def test_a_collection_made_without_the_english_copy_still_serves(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    uri = str(tmp_path / "milvus.db")
    with MilvusIndex(uri, english_analyzer="none") as old:
        collection = old.ensure_collection(embedder.name, embedder.dimension, False)
        old.replace_document(collection, "filing", make_rows(embedder, "filing", FILING_ROWS[:1]))
    with MilvusIndex(uri) as index, caplog.at_level("WARNING", logger="rag_assets.index.store"):
        assert index.open_collection(embedder.name, embedder.dimension, False) == collection
        assert not index.has_english_field(collection)
        assert "made without an English BM25 field" in caplog.text
        index.replace_document(collection, "filing", make_rows(embedder, "filing", FILING_ROWS))
        # Unstemmed: `the` is what matches.
        assert index.bm25_search(collection, "the liability", 1)[0].text == FILING_ROWS[1]


def test_a_collection_made_with_another_english_analyzer_is_refused(
    tmp_path: Path, embedder: Embedder
) -> None:
    uri = str(tmp_path / "milvus.db")
    with MilvusIndex(uri) as made:
        made.ensure_collection(embedder.name, embedder.dimension, False)
    for other in ("none", "standard"):
        with (
            MilvusIndex(uri, english_analyzer=other) as index,
            pytest.raises(ConfigurationError, match="rag.english_analyzer"),
        ):
            index.open_collection(embedder.name, embedder.dimension, False)


def test_an_unknown_analyzer_is_refused(db_uri: str) -> None:
    with pytest.raises(ConfigurationError, match="icu"):
        MilvusIndex(db_uri, text_analyzer="icu")


def test_a_row_matches_its_context_or_else_its_text() -> None:
    bare = IndexRow(chunk_id="a", doc_id="d", text="机器学习是人工智能的分支", dense=[1.0])
    assert (bare.context_text, bare.language) == (bare.text, "zh")
    chunk = ChunkRow(
        chunk_id="b",
        doc_id="d",
        source_path="d.pdf",
        source_sha256="0" * 64,
        template="semantic",
        chunk_index=0,
        text="Bits 15:8 hold the timeout.",
        context_text="主机控制器规范\n寄存器\nBits 15:8 hold the timeout.",
    )
    row = IndexRow.from_chunk(chunk, [1.0])
    assert (row.text, row.context_text, row.language) == (chunk.text, chunk.context_text, "zh")


def test_filters_escape_quotes() -> None:
    assert quote('a"b\\c') == '"a\\"b\\\\c"'


def test_a_chunk_without_pages_reads_back_without_pages(
    index: MilvusIndex, embedder: Embedder, scratch: str, docs: tuple[str, str]
) -> None:
    spec, _ = docs
    rows = [
        row.model_copy(update={"page_start": None, "page_end": None})
        for row in make_rows(embedder, spec, ["A pageless note about interrupt vectors."])
    ]
    index.replace_document(scratch, spec, rows)
    [hit] = index.dense_search(scratch, rows[0].dense, top_k=1, doc_id=spec)
    assert (hit.page_start, hit.page_end) == (None, None)
    shown = index.rows_for_hits(scratch, [rows[0].chunk_id])[rows[0].chunk_id]
    assert (shown["page_start"], shown["page_end"]) == (None, None)


def test_a_milvus_lite_3_folder_is_refused_with_the_way_out(tmp_path: Path) -> None:
    (tmp_path / "milvus.db").mkdir()
    with pytest.raises(ConfigurationError, match="Milvus Lite 3 folder.*re-index"):
        MilvusIndex(str(tmp_path / "milvus.db"))


@pytest.mark.slow
def test_a_replacement_in_a_collection_of_over_40000_rows_keeps_its_new_rows(
    tmp_path: Path,
) -> None:
    # In milvus-lite 2.5, once a collection holds about 40,000 rows, a `chunk_id not in [...]`
    # filter matches every row of the document, so deleting stale rows that way deleted all.
    documents, per_document, dim = 42, 1000, 8
    vectors = np.random.default_rng(0).standard_normal((per_document * 2, dim))

    def rows(doc_id: str, ids: range) -> list[IndexRow]:
        return [
            IndexRow(chunk_id=f"{doc_id}-{i}", doc_id=doc_id, text=f"row {i}", dense=vectors[i])
            for i in ids
        ]

    with MilvusIndex(str(tmp_path / "milvus.db"), collection_prefix="big") as index:
        collection = index.ensure_collection("m", dim, False)
        for d in range(documents):
            index.replace_document(collection, f"doc-{d}", rows(f"doc-{d}", range(per_document)))
        result = index.replace_document(collection, "doc-0", rows("doc-0", range(500, 1500)))
        kept = {r["chunk_id"] for r in index.scan(collection, ["chunk_id"], 'doc_id == "doc-0"')}
    assert (result.upserted, result.deleted) == (1000, 500)
    assert kept == {f"doc-0-{i}" for i in range(500, 1500)}
