"""Partition keys, file formats, the raw record and the inbox change plan."""

import json
import os
from pathlib import Path

import pytest

from rag_assets.errors import DocumentError
from rag_assets.sources.formats import detect_format
from rag_assets.sources.inbox import scan_inbox, sha256_file
from rag_assets.sources.keys import is_valid_partition_key, partition_key_for
from rag_assets.sources.raw import capture_raw_document
from rag_assets.sources.watch import (
    TrackedFile,
    plan_inbox_changes,
    read_manifest,
    write_manifest,
)


@pytest.mark.parametrize(
    "path",
    [
        "specs/Host Ctrl, v2.pdf",
        "../escape/../x.pdf",
        "a b/c,d/e.md",
        "法规/劳动合同法.md",
        " .hidden",
    ],
)
def test_partition_keys_are_sanitized_and_stable(path):
    key = partition_key_for(path)
    assert is_valid_partition_key(key), key
    assert not any(ch in key for ch in ", /\\") and ".." not in key
    assert partition_key_for(path) == key


def test_partition_keys_stay_unique_when_slugs_collide():
    assert partition_key_for("a b.pdf") != partition_key_for("a,b.pdf")
    assert partition_key_for("specs/x.pdf").startswith("x.pdf-")
    assert partition_key_for("specs/x.pdf") != partition_key_for("notes/x.pdf")


def test_formats_are_confirmed_by_content(tmp_path):
    (tmp_path / "ok.pdf").write_bytes(b"%PDF-1.7\n...")
    assert detect_format(tmp_path / "ok.pdf") == "pdf"
    cases = {
        "empty.pdf": (b"", "empty"),
        "fake.pdf": (b"<html>not a pdf</html>", "not a PDF"),
        "fake.docx": (b"%PDF-1.4", "not a Word"),
        "binary.md": (b"\x00\x01\x02", "binary"),
        "notes.xyz": (b"hello", "unsupported file type"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DocumentError, match=message):
            detect_format(tmp_path / name)


def _guide_in_inbox(tmp_path: Path) -> tuple[Path, Path, str]:
    """An inbox file, the folder its raw copies go to, and its partition key."""
    source = tmp_path / "inbox" / "guide.md"
    source.parent.mkdir()
    source.write_text("# Guide\n\nfirst")
    return source, tmp_path / "raw", partition_key_for("guide.md")


def test_raw_record_copies_the_file_and_replaces_an_older_copy(tmp_path):
    source, raw_dir, key = _guide_in_inbox(tmp_path)
    first = capture_raw_document(source, "guide.md", key, raw_dir)
    source.write_text("# Guide\n\nsecond version")
    second = capture_raw_document(source, "guide.md", key, raw_dir)
    assert first.sha256 != second.sha256
    assert Path(second.stored_path).read_text() == "# Guide\n\nsecond version"
    assert [p.name for p in (raw_dir / key).iterdir()] == ["guide.md"]
    assert (second.file_format, second.mime_type, second.page_count) == (
        "md",
        "text/markdown",
        None,
    )


def test_a_raw_copy_of_the_same_bytes_is_kept_and_a_new_one_swapped_in_whole(tmp_path):
    source, raw_dir, key = _guide_in_inbox(tmp_path)
    stored = Path(capture_raw_document(source, "guide.md", key, raw_dir).stored_path)
    kept = stored.stat().st_ino
    # Another run of the same document reads this copy meanwhile: it is never removed.
    assert Path(capture_raw_document(source, "guide.md", key, raw_dir).stored_path) == stored
    assert stored.stat().st_ino == kept
    source.write_text("# Guide\n\nsecond version")
    capture_raw_document(source, "guide.md", key, raw_dir)
    assert stored.read_text() == "# Guide\n\nsecond version"
    assert [p.name for p in raw_dir.iterdir()] == [key]  # nothing staged left beside it


def test_inbox_plan_adds_reruns_and_removes(tmp_path):
    inbox = tmp_path / "inbox"
    (inbox / "sub").mkdir(parents=True)
    (inbox / "a.md").write_text("# A")
    (inbox / "sub" / "b.md").write_text("# B")
    (inbox / ".hidden.md").write_text("# skipped")
    (inbox / "~$lock.docx").write_text("skipped")

    first = plan_inbox_changes(scan_inbox(inbox), {}, set(), lambda key: None)
    keys = sorted(first.add_partitions)
    assert keys == sorted([partition_key_for("a.md"), partition_key_for("sub/b.md")])
    assert sorted(k for k, _ in first.runs) == keys

    quiet = plan_inbox_changes(scan_inbox(inbox), first.state, set(keys), lambda key: None)
    assert (quiet.add_partitions, quiet.runs, quiet.remove_partitions) == ([], [], [])

    (inbox / "a.md").write_text("# A, edited")
    stat = (inbox / "sub" / "b.md").stat()
    os.utime(
        inbox / "sub" / "b.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9)
    )  # touched only
    changed = plan_inbox_changes(scan_inbox(inbox), quiet.state, set(keys), lambda key: None)
    assert [k for k, _ in changed.runs] == [partition_key_for("a.md")]

    (inbox / "sub" / "b.md").unlink()
    removed = plan_inbox_changes(scan_inbox(inbox), changed.state, set(keys), lambda key: None)
    assert removed.remove_partitions == [partition_key_for("sub/b.md")]
    assert list(removed.state) == ["a.md"]


def test_inbox_plan_skips_files_already_ingested_elsewhere(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.md").write_text("# A")
    key = partition_key_for("a.md")
    (file,) = scan_inbox(inbox)
    same = plan_inbox_changes([file], {}, {key}, lambda k: sha256_file(file.path))
    assert same.runs == []
    stale = plan_inbox_changes([file], {}, {key}, lambda k: "an older hash")
    assert [k for k, _ in stale.runs] == [key]


def test_links_leading_out_of_the_inbox_are_skipped_saying_why(tmp_path):
    from rag_assets.sources.inbox import scan_folder

    inbox, outside = tmp_path / "inbox", tmp_path / "outside"
    inbox.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nNot for the index.\n")
    (inbox / "own.md").write_text("# Own\n\nIndexed.\n")
    (inbox / "link.md").symlink_to(outside / "secret.md")
    (inbox / "inner.md").symlink_to(inbox / "own.md")  # a link inside the inbox is followed
    scan = scan_folder(inbox)
    assert [f.relative_path for f in scan.files] == ["inner.md", "own.md"]
    assert [(s.relative_path, "leading outside" in s.reason) for s in scan.skipped] == [
        ("link.md", True)
    ]
    followed = scan_folder(inbox, follow_symlinks=True)
    assert [f.relative_path for f in followed.files] == ["inner.md", "link.md", "own.md"]


def _tracked(count: int) -> dict[str, TrackedFile]:
    return {
        f"corpus/file-{i:05}.pdf": TrackedFile(
            key=partition_key_for(f"corpus/file-{i:05}.pdf"),
            size=1000 + i,
            mtime_ns=10**18 + i,
            sha256=f"{i:064x}",
        )
        for i in range(count)
    }


def test_the_inbox_cursor_is_a_short_summary_naming_its_manifest(tmp_path):
    state = _tracked(5000)
    cursor = write_manifest(state, tmp_path, None)
    assert len(cursor) < 80 and json.loads(cursor)["files"] == 5000
    assert read_manifest(cursor, tmp_path) == state

    # The manifest the last cursor names stays until the next is written, older ones go.
    second = write_manifest(_tracked(3), tmp_path, cursor)
    assert read_manifest(cursor, tmp_path) == state
    third = write_manifest(_tracked(4), tmp_path, second)
    assert read_manifest(third, tmp_path) == _tracked(4)
    assert read_manifest(second, tmp_path) == _tracked(3)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{json.loads(c)['manifest']}.json" for c in (second, third)
    )
    # A manifest gone tracks nothing, as a first look does.
    assert read_manifest(cursor, tmp_path) == {}


def test_an_inbox_cursor_of_the_earlier_form_is_read_once(tmp_path):
    state = _tracked(2) | {"manifest": TrackedFile(key="m-0", size=1, mtime_ns=1, sha256="0")}
    earlier = json.dumps({p: t.model_dump() for p, t in state.items()}, sort_keys=True)
    assert read_manifest(earlier, tmp_path) == state
    cursor = write_manifest(state, tmp_path, earlier)
    assert read_manifest(cursor, tmp_path) == state
