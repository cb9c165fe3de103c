"""The archive guards of arena/bots/archive.py, one hostile archive per attack, built with the standard library."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from arena.bots.archive import ArchiveLimits, ArchiveRejected, unpack

MANIFEST = b"name: tiny\ncommand: python3 bot.py\n"


def make_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, content in members:
            if content is not None:
                info.size = len(content)
            tar.addfile(info, None if content is None else io.BytesIO(content))
    return path


def file_member(name: str, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


def make_zip(path: Path, members: Sequence[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        for info, content in members:
            bundle.writestr(info, content, compress_type=zipfile.ZIP_DEFLATED)
    return path


def unix_zip_info(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def rejected(archive: Path, dest: Path, limits: ArchiveLimits = ArchiveLimits()) -> str:
    dest.mkdir()
    with pytest.raises(ArchiveRejected) as caught:
        unpack(archive, dest, limits)
    return str(caught.value)


def test_a_tar_gz_under_one_top_directory_unpacks_with_its_modes(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "bot.tar.gz", [(file_member("tiny/bot.yaml"), MANIFEST),
                                                 (file_member("tiny/run.sh", 0o755), b"#!/bin/sh\n"),
                                                 (file_member("tiny/lib/helper.py"), b"x = 1\n")])
    dest = tmp_path / "out"
    dest.mkdir()
    result = unpack(archive, dest)
    assert result.root == dest / "tiny" and result.files == 3 and result.kind == "tar.gz"
    assert (result.root / "lib" / "helper.py").read_bytes() == b"x = 1\n"
    assert stat.S_IMODE((result.root / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((result.root / "bot.yaml").stat().st_mode) == 0o644


def test_a_zip_with_files_at_its_root_unpacks(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "bot.zip", [("bot.yaml", MANIFEST), ("bot.py", b"print()\n"),
                                              ("__MACOSX/._bot.py", b"junk")])
    dest = tmp_path / "out"
    dest.mkdir()
    result = unpack(archive, dest)
    assert result.root == dest and result.kind == "zip"
    assert sorted(p.name for p in dest.iterdir()) == ["bot.py", "bot.yaml"]


@pytest.mark.parametrize("name", ["../evil.py", "tiny/../../evil.py", "/etc/evil", "C:/evil", "tiny\\..\\evil"])
def test_zip_slip_names_are_refused_before_anything_is_written(tmp_path: Path, name: str) -> None:
    archive = make_zip(tmp_path / "slip.zip", [("bot.yaml", MANIFEST), (name, b"pwned")])
    message = rejected(archive, tmp_path / "out")
    assert repr(name) in message or name in message
    assert not (tmp_path / "evil.py").exists() and not list(tmp_path.glob("**/evil*"))


def test_tar_slip_is_refused(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "slip.tar.gz", [(file_member("bot.yaml"), MANIFEST),
                                                  (file_member("../../evil.py"), b"pwned")])
    assert "'..'" in rejected(archive, tmp_path / "out")
    assert not list(tmp_path.glob("**/evil.py"))


@pytest.mark.parametrize("member, words", [
    (special("tiny/link", tarfile.SYMTYPE, "/etc/passwd"), "a symlink to '/etc/passwd'"),
    (special("tiny/hard", tarfile.LNKTYPE, "tiny/bot.yaml"), "a hard link"),
    (special("tiny/null", tarfile.CHRTYPE), "a device file"),
    (special("tiny/disk", tarfile.BLKTYPE), "a device file"),
    (special("tiny/pipe", tarfile.FIFOTYPE), "a FIFO"),
])
def test_tar_links_and_devices_are_refused(tmp_path: Path, member: tarfile.TarInfo, words: str) -> None:
    archive = make_tar(tmp_path / "bad.tar.gz", [(file_member("tiny/bot.yaml"), MANIFEST), (member, None)])
    message = rejected(archive, tmp_path / "out")
    assert words in message and member.name in message


def test_a_zip_symlink_and_a_zip_device_are_refused(tmp_path: Path) -> None:
    link = make_zip(tmp_path / "link.zip", [("bot.yaml", MANIFEST),
                                           (unix_zip_info("secret", stat.S_IFLNK | 0o777), b"/etc/shadow")])
    assert "secret: a symlink" in rejected(link, tmp_path / "out1")
    device = make_zip(tmp_path / "dev.zip", [("bot.yaml", MANIFEST),
                                            (unix_zip_info("tty", stat.S_IFCHR | 0o666), b"")])
    assert "tty: a device" in rejected(device, tmp_path / "out2")


def test_setuid_files_are_refused(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "suid.tar.gz", [(file_member("bot.yaml"), MANIFEST),
                                                  (file_member("root", 0o4755), b"x")])
    assert "setuid" in rejected(archive, tmp_path / "out")


def test_a_zip_bomb_is_refused_by_its_ratio(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "bomb.zip", [("bot.yaml", MANIFEST), ("zeros", bytes(8 << 20))])
    assert archive.stat().st_size < 20_000
    message = rejected(archive, tmp_path / "out")
    assert "compression bomb" in message
    assert not (tmp_path / "out" / "zeros").exists()  # refused from the headers, before a byte was written


def test_a_zip_whose_headers_lie_about_sizes_is_still_counted(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "liar.zip", [("bot.yaml", MANIFEST), ("zeros", bytes(4 << 20))])
    data = bytearray(archive.read_bytes())
    # Rewrite the declared uncompressed size of "zeros" to 10 bytes in both headers.
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (start := data.find(signature, start)) >= 0:
            name_at = start + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at:name_at + 5] == b"zeros":
                data[start + offset:start + offset + 4] = (10).to_bytes(4, "little")
            start += 4
    archive.write_bytes(bytes(data))
    assert "Bad CRC-32 for file 'zeros'" in rejected(archive, tmp_path / "out")
    assert (tmp_path / "out" / "zeros").stat().st_size <= 10  # cut at the declared size: never 4 MiB on disk


def test_a_tar_gz_bomb_is_refused_while_decompressing(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "bomb.tar.gz", [(file_member("bot.yaml"), MANIFEST),
                                                  (file_member("zeros"), bytes(30 << 20))])
    assert archive.stat().st_size < 100_000
    message = rejected(archive, tmp_path / "out")
    assert "compression bomb" in message or "too large" in message
    written = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert written <= (1 << 20) + 1024 * 500


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "many.zip", [("bot.yaml", MANIFEST)] + [(f"f{i}.txt", b"x") for i in range(12)])
    assert "too many files" in rejected(archive, tmp_path / "out", ArchiveLimits(max_files=10))


def test_an_oversized_archive_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    archive = tmp_path / "big.zip"
    archive.write_bytes(b"PK\x03\x04" + bytes(2000))
    assert "the archive is 2004 bytes" in rejected(archive, tmp_path / "out", ArchiveLimits(max_archive_bytes=1000))


def test_a_name_listed_twice_is_refused(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "twice.tar.gz", [(file_member("bot.yaml"), MANIFEST),
                                                   (file_member("bot.yaml"), b"name: other\n")])
    assert "listed twice" in rejected(archive, tmp_path / "out")


def test_garbage_and_archives_without_a_manifest_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"hello, not an archive")
    assert "not a .tar.gz or a .zip" in rejected(garbage, tmp_path / "out1")
    truncated = tmp_path / "cut.tar.gz"
    truncated.write_bytes(make_tar(tmp_path / "whole.tar.gz", [(file_member("bot.yaml"), MANIFEST * 50)])
                          .read_bytes()[:30])
    assert "not a readable .tar.gz" in rejected(truncated, tmp_path / "out2")
    empty = make_zip(tmp_path / "two.zip", [("a/bot.yaml", MANIFEST), ("b/bot.yaml", MANIFEST)])
    assert "no bot.yaml at the archive's root or under one top directory" in rejected(empty, tmp_path / "out3")


def test_a_member_name_longer_than_the_file_system_holds_is_refused(tmp_path: Path) -> None:
    # A PAX header carries the 300-character name (ustar holds 100): unpacking it once gave ENAMETOOLONG, a 500.
    message = rejected(make_tar(tmp_path / "long.tar.gz", [(file_member("bot.yaml"), MANIFEST),
                                                           (file_member("x" * 300), b"data")]), tmp_path / "out")
    assert "a file or directory name longer than 255 bytes" in message
