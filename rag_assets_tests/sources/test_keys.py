"""Partition keys and paths: only keys rag_assets minted reach a path, nothing leaves the data."""

import os
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance
from dagster._core.instance_for_test import instance_for_test

from rag_assets.cli import main
from rag_assets.defs.build import build_defs
from rag_assets.defs.jobs import INGEST_JOB
from rag_assets.instance import ensure_dagster_home
from rag_assets.runner.ingest import ingest, place_in_inbox
from rag_assets.settings import Settings
from rag_assets.sources.inbox import scan_folder
from rag_assets.sources.keys import (
    CUT,
    MAX_KEY_WIDTH,
    InvalidPartitionKey,
    check_partition_key,
    earlier_partition_keys_for,
    is_valid_partition_key,
    key_width,
    partition_key_for,
)
from rag_assets.sources.paths import UnsafePathError, inside
from rag_assets.sources.raw import capture_raw_document
from rag_assets.storage import resolve_doc_id, resolve_doc_ids
from rag_assets_tests.support.sensors import inbox_sensor_tick
from rag_assets_tests.support.workspace import REPOSITORY_SELECTOR, code_location, graphql

HOSTILE_KEYS = [
    "../../victim",
    "../victim-1a2b3c4d",
    "/tmp/victim",
    "..%2F..%2Fvictim-1a2b3c4d",
    "%2e%2e-1a2b3c4d",
    "\uff0e\uff0e\uff0fvictim-1a2b3c4d",  # fullwidth ．．／
    "victim\uff0f..-1a2b3c4d",
    "a/b-1a2b3c4d",
    "a\\b-1a2b3c4d",
    "..-1a2b3c4d",
    "x..y-1a2b3c4d",
    "-x-1a2b3c4d",
    "x-1A2B3C4D",
    "x-1a2b3c4",
    "",
    "x" * 200 + "-1a2b3c4d",
]


@pytest.mark.parametrize(
    "path",
    [
        "a.md",
        "specs/Host Ctrl, v2.pdf",
        "../escape/../x.pdf",
        " .hidden",
        "法规/劳动合同法.md",
        "-leading dash.md",
        "x" * 200 + ".md",
        "bad-\udcff-name.md",  # not valid UTF-8 (surrogateescape)
        "'quoted' \"name\", with commas.md",
        "W" * 90 + ".docx",
    ],
)
def test_every_minted_key_is_valid(path):
    assert check_partition_key(partition_key_for(path)) == partition_key_for(path)


# A folder of look-alike names, as filings cut into pages are named: what tells them apart is
# at the end of the stem.
LOOK_ALIKES = [
    *(f"filings/JOHNSON_JOHNSON_2022_10K_p{page:03}.pdf" for page in range(1, 31)),
    *(f"filings/PEPSICO_2023Q{quarter}_10Q.pdf" for quarter in (1, 2, 3)),
    "filings/AMERICANEXPRESS_2022_10K.pdf",
    "filings/AMERICANEXPRESS_2022_10Q.pdf",
    "corpus/operator-guide.md",
    "corpus/host-controller-spec.pdf",
    "corpus/host-controller-spec-v2.pdf",
]


def readable(key: str) -> str:
    return key.rsplit("-", 1)[0]


def test_keys_tell_a_folders_look_alike_files_apart_before_their_hash():
    keys = [partition_key_for(path) for path in LOOK_ALIKES]
    assert len({readable(key) for key in keys}) == len(LOOK_ALIKES), keys
    assert readable(partition_key_for("filings/JOHNSON_JOHNSON_2022_10K_p003.pdf")).endswith(
        "_p003.pdf"
    )
    assert readable(partition_key_for("filings/PEPSICO_2023Q2_10Q.pdf")).endswith("Q2_10Q.pdf")


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("specs/manual.pdf", "manual.pdf"),
        ("a/b/readme.md", "readme.md"),
        ("top.md", "top.md"),
        ("corpus/host-controller-spec.pdf", f"host{CUT}ller-spec.pdf"),
        ("corpus/operator-guide.md", f"oper{CUT}or-guide.md"),
        ("specs/" + "x" * 200 + ".md", f"xxxx{CUT}xxxxxxx.md"),
        ("NO_EXTENSION_BUT_A_LONG_NAME", f"NO_EX{CUT}NG_NAME"),
    ],
)
def test_every_key_is_the_name_shortened_in_its_middle_then_the_hash(path, key):
    """One shape, whatever the folder: the stem's start and end, the extension, the hash."""
    minted = partition_key_for(path)
    assert readable(minted) == key
    assert len(minted.rsplit("-", 1)[1]) == 8


@pytest.mark.parametrize("path", [*LOOK_ALIKES, "W" * 90 + ".pdf", "m" * 40, "0" * 60 + ".md"])
def test_keys_fit_the_narrowest_partition_list_of_the_ui(path):
    assert key_width(partition_key_for(path)) <= MAX_KEY_WIDTH


def test_the_earlier_schemes_are_still_recognised():
    earlier = earlier_partition_keys_for("corpus/spec.pdf")
    assert [k[:-8] for k in earlier] == ["corpus--spec.pdf-", "spec.pdf--corpus-"]
    assert all(k[-8:] == partition_key_for("corpus/spec.pdf")[-8:] for k in earlier)
    assert all(is_valid_partition_key(k) for k in earlier_partition_keys_for("c/" + "y" * 90))
    # A key that has not changed is no earlier key.
    assert earlier_partition_keys_for("top.md") == []
    assert earlier_partition_keys_for("corpus/host-controller-spec.pdf")[1].startswith(
        "host-controller-spec.pdf-"
    )


@pytest.mark.parametrize("key", HOSTILE_KEYS)
def test_keys_not_minted_here_are_refused_with_a_reason(key):
    assert not is_valid_partition_key(key)
    with pytest.raises(InvalidPartitionKey, match="was not made by rag_assets"):
        check_partition_key(key)


def test_paths_from_names_stay_inside_their_root(tmp_path):
    root = tmp_path / "raw"
    assert inside(root, "doc-1a2b3c4d", "a.pdf") == root.resolve() / "doc-1a2b3c4d" / "a.pdf"
    (tmp_path / "outside").mkdir()
    root.mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    for parts in [("..", "x"), ("/etc/passwd",), ("a", "..", "..", "x"), ("link", "x"), ("",)]:
        with pytest.raises(UnsafePathError):
            inside(root, *parts)


def test_raw_capture_refuses_a_hand_made_key(tmp_path):
    source = tmp_path / "a.md"
    source.write_text("# A\n\ntext")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    with pytest.raises(InvalidPartitionKey):
        capture_raw_document(source, "a.md", "../victim", tmp_path / "raw")
    assert (victim / "keep.txt").read_text() == "keep"


def test_scan_skips_links_out_dot_files_odd_names_and_pipes_and_says_why(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "other.md").write_text("# other")
    inbox = tmp_path / "inbox"
    (inbox / "sub").mkdir(parents=True)
    (inbox / "a.md").write_text("# A")
    (inbox / "passwd.txt").symlink_to(secret)
    (inbox / "linked").symlink_to(outside_dir)
    (inbox / "same.md").symlink_to(inbox / "a.md")  # inside the inbox: followed
    (inbox / "broken.md").symlink_to(tmp_path / "missing.md")
    (inbox / ".env.md").write_text("hidden")
    (inbox / ".git").mkdir()
    (inbox / ".git" / "x.md").write_text("hidden")
    os.mkfifo(inbox / "pipe.txt")
    (Path(os.fsdecode(bytes(inbox) + b"/bad-\xff.md"))).write_text("undecodable name")

    scan = scan_folder(inbox)
    assert [f.relative_path for f in scan.files] == ["a.md", "same.md"]
    reasons = {s.relative_path: s.reason for s in scan.skipped}
    assert "leading outside" in reasons["passwd.txt"]
    assert "RAG_ASSETS_INBOX_FOLLOW_SYMLINKS" in reasons["linked/"]
    assert "broken" in reasons["broken.md"]
    assert "dot" in reasons[".env.md"] and "dot" in reasons[".git/"]
    assert "regular file" in reasons["pipe.txt"]
    assert "UTF-8" in reasons["bad-\\xff.md"]
    for skipped in scan.skipped:
        assert "\n" not in skipped.summary()

    followed = scan_folder(inbox, follow_symlinks=True)
    assert {"passwd.txt", "linked/other.md"} <= {f.relative_path for f in followed.files}


def test_ingest_of_a_folder_does_not_copy_a_link_to_a_system_file(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A")
    (folder / "hosts.md").symlink_to("/etc/hosts")
    (folder / ".hidden.md").write_text("# hidden")
    inbox = tmp_path / "data" / "inbox"
    placed, skipped = place_in_inbox([folder], inbox)
    assert placed == ["docs/a.md"]
    assert {s.relative_path for s in skipped} == {"docs/hosts.md", "docs/.hidden.md"}
    assert not (inbox / "docs" / "hosts.md").exists()


def test_cli_chunks_refuses_a_path_as_doc_id(tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.parquet").write_bytes(b"PAR1")
    settings = Settings(data_dir=tmp_path / "data")
    with pytest.raises(LookupError):
        resolve_doc_id(settings, "../../outside/stolen")
    assert main(["chunks", "--data-dir", str(tmp_path / "data"), "../../outside/stolen"]) == 1
    assert "no ingested document matches" in capsys.readouterr().err


def test_many_file_names_are_resolved_from_one_listing_of_the_inbox(tmp_path, monkeypatch):
    import rag_assets.storage as storage

    settings = Settings(data_dir=tmp_path / "data")
    names = ["a.md", "b.md", "sub/c.md"]
    for name in names:
        (settings.inbox_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (settings.inbox_dir / name).write_text(f"# {name}\n")
    listings = []
    scan = storage.scan_inbox
    monkeypatch.setattr(storage, "scan_inbox", lambda *a: listings.append(a) or scan(*a))
    keys = resolve_doc_ids(settings, ["a.md", "b.md", "c.md", "sub/c.md"])
    assert keys == [partition_key_for(n) for n in ["a.md", "b.md", "sub/c.md", "sub/c.md"]]
    assert len(listings) == 1
    with pytest.raises(LookupError, match="no ingested document matches 'd.md'"):
        resolve_doc_ids(settings, ["a.md", "d.md"])


# What the Materialize dialog's "Add a partition" sends (dagster-webapp's CreatePartitionDialog).
ADD_PARTITION = """
mutation ($selector: RepositorySelector!, $key: String!) {
  addDynamicPartition(repositorySelector: $selector, partitionsDefName: "documents",
                      partitionKey: $key) { __typename ... on PythonError { message } }
}
"""


def test_a_data_folders_instance_refuses_a_key_added_by_hand_before_storing_it(
    tmp_path, monkeypatch
):
    """The dialog's "Add a partition" on the instance `rag-assets ui` serves: a name typed as a
    person would, a path reaching outside, or a key of the project's shape that no file in the
    inbox has, is refused with how to add a document, and no partition is made; the key of a
    file in the inbox is that document's partition."""
    settings = Settings(data_dir=tmp_path / "data")
    settings.inbox_dir.mkdir(parents=True)
    (settings.inbox_dir / "specs").mkdir()
    (settings.inbox_dir / "specs" / "manual.md").write_text("# Manual\n\nThe manual.\n")
    refusals = {
        "manual.pdf": "was not made by rag_assets",
        "../../victim": "was not made by rag_assets",
        "reports/q2.pdf": "was not made by rag_assets",
        partition_key_for("manual.md"): "no file in the inbox",
        "manual.md-1a2b3c4d": "no file in the inbox",
    }
    with (
        DagsterInstance.from_config(str(ensure_dagster_home(settings))) as instance,
        code_location(instance, settings.data_dir, monkeypatch) as context,
    ):
        for key, refusal in refusals.items():
            added = graphql(context, ADD_PARTITION, {"selector": REPOSITORY_SELECTOR, "key": key})
            refused = added["addDynamicPartition"]
            assert refused["__typename"] == "PythonError", (key, refused)
            assert refusal in refused["message"] and "rag-assets ingest PATH" in refused["message"]
        document = partition_key_for("specs/manual.md")
        added = graphql(context, ADD_PARTITION, {"selector": REPOSITORY_SELECTOR, "key": document})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess"
        assert instance.get_dynamic_partitions("documents") == [document]


@pytest.mark.slow
def test_hand_added_keys_fail_the_run_and_touch_nothing_outside(tmp_path, monkeypatch):
    """A key added by hand on an instance of another event log than the data folder's (which
    refuses it when added) fails its run at its first step, saying what to do instead, and the
    inbox sensor's next tick deletes it."""
    data = tmp_path / "data"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    settings = Settings(data_dir=data)
    source = tmp_path / "a.md"
    source.write_text("# Alpha\n\nThe alpha document.\n")
    # A file's name, as a person would type it, and keys that would reach outside the data.
    keys = [
        "manual.pdf",
        "../../victim",
        str(victim),
        "..%2F..%2Fvictim",
        "\uff0e\uff0e\uff0fvictim",
    ]
    keys_alike = ["manual.pdf-1a2b3c4d"]  # shaped like rag_assets' keys, with no file
    instead = f"put its file in the inbox ({settings.inbox_dir}) or run `rag-assets ingest PATH`"
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        (good,) = ingest(settings, [source], instance=instance)
        assert good.success
        with code_location(instance, data, monkeypatch) as context:
            for key in keys + keys_alike:
                added = graphql(
                    context, ADD_PARTITION, {"selector": REPOSITORY_SELECTOR, "key": key}
                )
                assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess"
        defs = build_defs(settings)
        job = defs.resolve_job_def(INGEST_JOB)
        for key in keys + keys_alike:
            result = job.execute_in_process(
                partition_key=key, instance=instance, raise_on_error=False
            )
            failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
            assert [e.step_key for e in failures] == ["raw_documents"]
            message = failures[0].event_specific_data.error.message
            refusal = "was not made by rag_assets" if key in keys else "no file in the inbox has"
            assert refusal in message and instead in message, message
        # A downstream asset alone reads through the IO manager, which refuses the key too.
        downstream = defs.resolve_implicit_global_asset_job_def()
        result = downstream.execute_in_process(
            partition_key="../../victim",
            instance=instance,
            raise_on_error=False,
            asset_selection=[AssetKey("vector_index")],
        )
        assert not result.success

        inbox_sensor_tick(defs, instance, None)
        assert instance.get_dynamic_partitions("documents") == [good.doc_id]
    assert (victim / "keep.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "dagster", "data", "victim"]
