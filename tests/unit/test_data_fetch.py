"""`llmexplore data`: pinned files fetched from a real local HTTP server, resumed, verified, refetched."""

from __future__ import annotations

import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from llmexplore.cli import main
from llmexplore.data import fetch as fetching
from llmexplore.data.catalog import DATASETS
from llmexplore.errors import DataError

CRAFTER = DATASETS["crafter"]
RANDOM = "crafter_noreward-random.json"  # 2.6 MB: big enough to cut in the middle


class Mirror(SimpleHTTPRequestHandler):
    """Serves a folder with HTTP Range support, recording requests and injecting faults once per path."""

    cut_after: dict[str, int] = {}  # path -> bytes sent before the connection is dropped
    corrupt: set[str] = set()  # paths served with one byte flipped
    log: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.log.append((self.path, self.headers.get("Range")))
        file = Path(self.translate_path(self.path))
        if not file.is_file():
            self.send_error(404)
            return
        body = bytearray(file.read_bytes())
        if self.path in self.corrupt:
            body[len(body) // 2] ^= 0xFF
        start = 0
        ranged = self.headers.get("Range")
        if ranged and ranged.startswith("bytes=") and ranged.endswith("-"):
            start = int(ranged[len("bytes="):-1])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        cut = self.cut_after.pop(self.path, None)
        self.wfile.write(bytes(body[start:start + cut] if cut is not None else body[start:]))
        if cut is not None:
            self.wfile.flush()
            self.close_connection = True

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def mirror(shared_data):
    """A real HTTP server on a free local port serving ../shared/data."""
    Mirror.cut_after, Mirror.corrupt, Mirror.log = {}, set(), []

    def handler(*args, **kwargs):
        return Mirror(*args, directory=str(shared_data), **kwargs)

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _states(root: Path) -> dict[str, str]:
    return {s.file.path: s.state for s in fetching.dataset_state(CRAFTER, root / "crafter")}


def test_fetch_from_a_mirror_verifies_every_file_and_lists_it(mirror, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLMEXPLORE_DATA", str(tmp_path / "data"))
    assert set(_states(tmp_path / "data").values()) == {"missing"}
    assert main(["data", "fetch", "crafter", "--from", mirror]) == 0
    assert set(_states(tmp_path / "data").values()) == {"verified"}
    assert not list((tmp_path / "data").rglob("*.part"))
    assert main(["data", "list", "--json"]) == 0
    listed = {row["name"]: row for row in __import__("json").loads(capsys.readouterr().out.split("\n", 1)[1])}
    assert listed["crafter"]["status"] == "verified" and listed["housekeep"]["status"] == "missing"
    assert listed["crafter"]["families"] == ["crafter"]  # the families naming it (EnvFamily.data_sources)


def test_a_file_the_mirror_lacks_is_a_404_error_and_leaves_nothing(mirror, tmp_path):
    with pytest.raises(DataError, match="HTTP 404") as err:
        fetching.fetch("crafter", tmp_path, mirror + "/nowhere")
    assert "--from" in err.value.hint
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_a_checksum_mismatch_deletes_the_download(mirror, tmp_path):
    Mirror.corrupt = {"/crafter/crafter_reward-human.json"}
    with pytest.raises(DataError, match="checksum mismatch") as err:
        fetching.fetch("crafter", tmp_path, mirror)
    assert "again" in err.value.hint
    assert _states(tmp_path)["crafter_reward-human.json"] == "missing"  # neither final file nor part
    assert not list(tmp_path.rglob("*.part"))


def test_a_cut_connection_resumes_from_the_part_with_a_range_request(mirror, tmp_path):
    Mirror.cut_after = {f"/crafter/{RANDOM}": 1_000_000}
    lines: list[str] = []
    fetching.fetch("crafter", tmp_path, mirror, report=lines.append)
    assert _states(tmp_path)[RANDOM] == "verified"
    assert (f"/crafter/{RANDOM}", "bytes=1000000-") in Mirror.log
    assert any("connection cut after 1,000,000" in line for line in lines)


def test_a_fetch_cut_off_for_good_keeps_the_part_and_the_next_run_resumes(mirror, tmp_path, monkeypatch):
    monkeypatch.setattr(fetching, "ATTEMPTS", 1)
    Mirror.cut_after = {f"/crafter/{RANDOM}": 700_000}
    with pytest.raises(DataError, match="cut off") as err:
        fetching.fetch("crafter", tmp_path, mirror)
    assert "resumes" in err.value.hint
    part = tmp_path / "crafter" / f"{RANDOM}.part"
    assert part.stat().st_size == 700_000 and _states(tmp_path)[RANDOM] == "partial"
    fetching.fetch("crafter", tmp_path, mirror)
    assert (f"/crafter/{RANDOM}", "bytes=700000-") in Mirror.log
    assert _states(tmp_path)[RANDOM] == "verified" and not part.exists()


def test_a_corrupted_file_is_detected_and_fetched_again(mirror, tmp_path):
    fetching.fetch("crafter", tmp_path, mirror)
    target = tmp_path / "crafter" / "crafter_reward-human.json"
    target.write_bytes(target.read_bytes()[:-10] + b"0123456789")
    assert _states(tmp_path)["crafter_reward-human.json"] == "corrupt"
    with pytest.raises(DataError, match="HTTP 404"):  # a failed refetch leaves no damaged file to read
        fetching.fetch("crafter", tmp_path, mirror + "/nowhere")
    assert _states(tmp_path)["crafter_reward-human.json"] == "missing"
    Mirror.log.clear()
    fetching.fetch("crafter", tmp_path, mirror)
    assert [path for path, _ in Mirror.log] == ["/crafter/crafter_reward-human.json"]
    assert set(_states(tmp_path).values()) == {"verified"}


def test_a_local_copy_fills_the_data_folder(shared_data, tmp_path):
    fetching.fetch("crafter", tmp_path, str(shared_data))
    assert set(_states(tmp_path).values()) == {"verified"}
    fetching.fetch("crafter", tmp_path / "other", str(shared_data / "crafter"))  # or the dataset's folder
    assert set(_states(tmp_path / "other").values()) == {"verified"}


def test_housekeep_from_a_local_copy_then_its_task_runs(shared_data, tmp_path, monkeypatch):
    from llmexplore.envs import make_adapter

    fetching.fetch("housekeep", tmp_path, str(shared_data))
    states = fetching.dataset_state(DATASETS["housekeep"], tmp_path / "housekeep")
    assert {s.state for s in states} == {"verified"}
    monkeypatch.setenv("LLMEXPLORE_DATA", str(tmp_path))
    monkeypatch.delenv("LLMEXPLORE_HOUSEKEEP_DATA", raising=False)
    adapter = make_adapter("housekeep:pomaria_0")
    adapter.validate_data()
    env = adapter.make_env(seed=0)
    env.reset(seed=0)
    env.step(0)
    env.close()


def test_an_unknown_dataset_names_the_known_ones(capsys):
    assert main(["data", "fetch", "nethack-replays"]) == 2
    err = capsys.readouterr().err
    assert "unknown dataset 'nethack-replays'" in err and "crafter, housekeep" in err


def test_an_unreachable_server_is_a_clear_error(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DataError, match="cannot reach") as err:
        fetching.fetch("crafter", tmp_path, f"http://127.0.0.1:{port}", timeout=5)
    assert "--from" in err.value.hint
    assert not list(tmp_path.rglob("*.part")) and not (tmp_path / "crafter" / "LICENSE").exists()


def test_a_folder_that_cannot_be_written_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(DataError, match="cannot write to the data folder") as err:
        fetching.fetch("crafter", blocker / "data", "http://127.0.0.1:9")
    assert "LLMEXPLORE_DATA" in err.value.hint


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_a_clear_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    with pytest.raises(DataError, match="cannot write to the data folder"):
        fetching.fetch("crafter", folder, "http://127.0.0.1:9")
