"""`fedtopic export tensorboard`: a run's history as TensorBoard event files, read back record by record (TFRecord
framing, tensorboardX's Event protobuf): one run per party, tags <party>/<metric>, step = round."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main

event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")


def read_events(folder: Path) -> list:
    """Every Event in ``folder``'s event files (TFRecord: u64 length, u32 crc, data, u32 crc)."""
    events = []
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, at = path.read_bytes(), 0
        while at < len(data):
            (length,) = struct.unpack_from("<Q", data, at)
            event = event_pb2.Event()
            event.ParseFromString(data[at + 12:at + 12 + length])
            events.append(event)
            at += 12 + length + 4
    return events


def scalars(folder: Path) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for event in read_events(folder):
        for value in event.summary.value:
            out.setdefault(value.tag, {})[event.step] = value.simple_value
    return out


def test_a_simulate_runs_history_becomes_one_tensorboard_run_per_party(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(60, seed=1))
    run = tmp_path / "run"
    assert main(["simulate", "--algorithm", "csfed-lda", "--corpus", str(corpus), "--parties", "2", "-k", "2",
                 "--iterations", "3", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["export", "tensorboard", str(run), "--out", str(tmp_path / "tb"), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["scalars"]) == {"p1", "p2"}
    for party in ("p1", "p2"):
        rows = [json.loads(line) for line in (run / "history" / f"{party}.jsonl").read_text().splitlines()]
        got = scalars(tmp_path / "tb" / party)
        assert all(tag.startswith(f"{party}/") for tag in got)
        quality = f"{party}/{rows[-1]['quality_name']}"
        assert got[quality] == {r["round"]: pytest.approx(r["quality"], rel=1e-6) for r in rows}  # float32 in TB
        assert got[f"{party}/bytes_up"] == {r["round"]: float(r["bytes_up"]) for r in rows}
        assert got[f"{party}/contributors"] == {r["round"]: 2.0 for r in rows}
        assert sum(len(v) for v in got.values()) == result["scalars"][party]
    # exported again (a live run catching up): the same scalars, not twice
    assert main(["export", "tensorboard", str(run), "--out", str(tmp_path / "tb")]) == 0
    assert len(list((tmp_path / "tb" / "p1").glob("events.out.tfevents.*"))) == 1


def test_exporting_what_holds_no_history_is_one_line(tmp_path, capsys):
    assert main(["export", "tensorboard", str(tmp_path), "--out", str(tmp_path / "tb")]) == 2
    err = capsys.readouterr().err
    assert "holds no history" in err and "Traceback" not in err
    assert main(["export", "tensorboard", str(tmp_path / "nope"), "--out", str(tmp_path / "tb")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_consortiums_state_folder_and_a_single_history_file_are_found(tmp_path):
    from fedtopic.runs.tensorboard import history_files

    for party in ("p1", "p2"):
        (tmp_path / "c" / "state" / party).mkdir(parents=True)
        (tmp_path / "c" / "state" / party / "history.jsonl").write_text("")
    assert set(history_files(tmp_path / "c")) == {"p1", "p2"}
    assert set(history_files(tmp_path / "c" / "state")) == {"p1", "p2"}
    assert history_files(tmp_path / "c" / "state" / "p2" / "history.jsonl") == {
        "p2": tmp_path / "c" / "state" / "p2" / "history.jsonl"}


def test_a_train_runs_perplexity_curve_is_exported_and_tensorboard_itself_reads_it(tmp_path, capsys):
    """A train run has no rounds: its held-out perplexity curve is the run (step = iteration), and the
    [tensorboard] extra brings TensorBoard itself, whose reader gets the same points back."""
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(60, seed=2))
    run = tmp_path / "run"
    assert main(["train", "--algorithm", "centralized-lda", "--corpus", str(corpus), "-k", "2", "--iterations", "6",
                 "--eval-every", "2", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["export", "tensorboard", str(run), "--out", str(tmp_path / "tb")]) == 0
    assert "scalars of 1 party;" in capsys.readouterr().out
    curve = json.loads((run / "summary.json").read_text())["perplexity_curve"]["0"]
    reader = accumulator.EventAccumulator(str(tmp_path / "tb" / "train"))
    reader.Reload()
    points = {e.step: e.value for e in reader.Scalars("train/perplexity")}
    assert points == {step: pytest.approx(value, rel=1e-6) for step, value in curve}
    assert sorted(points) == [2, 4, 6]
