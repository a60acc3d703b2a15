"""docs/training.md's code runs as printed: the plain loop (a real scikit-learn model trained
by partial_fit, in its own process, from a new directory) and the PyTorch Lightning and
Hugging Face callbacks, driven through the hooks those frameworks call, with stand-ins for the
framework's objects (neither framework is a dependency: their CPU wheels are gigabytes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from conftest import ranked

from evalstore import Store

PAGE = Path(__file__).parent.parent / "docs" / "training.md"


def blocks(language: str) -> list[str]:
    """The page's fenced code blocks of ``language``, in order."""
    parts = PAGE.read_text(encoding="utf-8").split(f"```{language}\n")[1:]
    return [part.split("```", 1)[0] for part in parts]


def block_with(language: str, text: str) -> str:
    found = [b for b in blocks(language) if text in b]
    assert len(found) == 1, f"docs/training.md: one {language} block holds {text!r}"
    return found[0]


@pytest.mark.slow
def test_the_plain_loop_runs_and_reads_back(tmp_path: Path, cli: Any) -> None:
    """The loop as printed, from a new directory: the run is made, finished, logs its loss at
    5 steps and holds 5 step runs; `eval --by step` and `history --by step` read them back."""
    script = tmp_path / "loop.py"
    script.write_text(block_with("python", 'evalstore.init("digits/sgd"'), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "EVALSTORE_DB"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    db = tmp_path / "evalstore.duckdb"
    with Store(db, read_only=True) as store:
        info = store.run("digits/sgd")
        steps = store.sql("select step from v_steps where run = 'digits/sgd' order by step")
        losses = store.sql(
            "select step, value from v_logged where run = 'digits/sgd' and metric = 'train_loss'"
            " order by step"
        )
    assert info["status"] == "finished" and info["params"] == {"alpha": 1e-4}
    assert steps["step"].to_list() == [0, 1, 2, 3, 4]
    assert losses["step"].to_list() == [0, 1, 2, 3, 4]
    assert all(0 < v < 10 for v in losses["value"])
    shown = cli("eval", "digits/sgd", "-m", "map", "--by", "step", "--format", "json",
                "--db", str(db))  # fmt: skip
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)
    assert sorted(r["step"] for r in rows) == [0, 1, 2, 3, 4]
    assert all(0.5 < r["value"] <= 1 for r in rows)  # digits are easy for a linear model


def framework(monkeypatch: pytest.MonkeyPatch, name: str, **attributes: Any) -> None:
    """A module ``name`` (and its parents) with ``attributes``: the framework's base classes
    the snippet subclasses."""
    parts = name.split(".")
    for k in range(1, len(parts) + 1):
        module = types.ModuleType(".".join(parts[:k]))
        monkeypatch.setitem(sys.modules, module.__name__, module)
        if k > 1:
            setattr(sys.modules[".".join(parts[: k - 1])], parts[k - 1], module)
    for key, value in attributes.items():
        setattr(sys.modules[name], key, value)


def snippet(text: str) -> dict[str, Any]:
    space: dict[str, Any] = {}
    exec(compile(block_with("python", text), str(PAGE), "exec"), space)  # the page's own code
    return space


def test_the_lightning_callback_logs_steps_and_lists(
    monkeypatch: pytest.MonkeyPatch, db: Path
) -> None:
    framework(monkeypatch, "lightning.pytorch", Callback=object)
    callback = snippet("L.Callback")["Evalstore"]("lit/r", db=db, flush_every=3600.0)
    trainer = types.SimpleNamespace(callback_metrics={"train/loss": 0.5}, global_step=10)
    module = types.SimpleNamespace(val_rows=ranked(seed=1))
    callback.on_train_batch_end(trainer, module, None, None, 0)
    trainer.callback_metrics, trainer.global_step = {"train/loss": 0.25}, 20
    callback.on_train_batch_end(trainer, module, None, None, 1)
    callback.on_validation_epoch_end(trainer, module)
    callback.on_fit_end(trainer, module)
    with Store(db, read_only=True) as store:
        logged = store.sql("select metric, step, value from v_logged order by step").rows()
        steps = store.sql("select run, step, step_run from v_steps").rows()
        status = store.run("lit/r")["status"]
    assert logged == [("train_loss", 10, 0.5), ("train_loss", 20, 0.25)]
    assert steps == [("lit/r", 20, "lit/r@20")] and status == "finished"


def test_the_lightning_callback_marks_an_exception_failed(
    monkeypatch: pytest.MonkeyPatch, db: Path
) -> None:
    framework(monkeypatch, "lightning.pytorch", Callback=object)
    callback = snippet("L.Callback")["Evalstore"]("lit/bad", db=db, flush_every=3600.0)
    callback.on_exception(None, None, RuntimeError("out of memory"))
    with Store(db, read_only=True) as store:
        assert store.run("lit/bad")["status"] == "failed"


def test_the_hugging_face_callback_logs_numbers_at_the_global_step(
    monkeypatch: pytest.MonkeyPatch, db: Path
) -> None:
    framework(monkeypatch, "transformers", TrainerCallback=object)
    callback = snippet("TrainerCallback")["Evalstore"]("hf/r", db=db, flush_every=3600.0)
    state = types.SimpleNamespace(global_step=3)
    logs = {"loss": 0.75, "learning_rate": 5e-5, "epoch": 0.5, "eval/runtime": 1.5,
            "note": "text is left out"}  # fmt: skip
    callback.on_log(None, state, None, logs=logs)
    callback.on_train_end(None, state, None)
    with Store(db, read_only=True) as store:
        logged = store.sql("select metric, value from v_logged where step = 3 order by 1").rows()
        assert store.run("hf/r")["status"] == "finished"
    assert logged == [("epoch", 0.5), ("eval_runtime", 1.5), ("learning_rate", 5e-5),
                      ("loss", 0.75)]  # fmt: skip
