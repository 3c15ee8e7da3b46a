"""torch's log held back while a model is captured (compiler.frontend.torch_logs)."""

import logging

import pytest
import torch

from compiler.frontend import FrontendError, from_torch
from compiler.frontend.torch_logs import MAX_KEPT, held_torch_logs


class _ShapeBug(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.lin(x) + torch.ones(5)  # (2, 4) + (5,): torch logs the meta traceback


def test_a_failed_capture_prints_nothing_of_torchs_and_keeps_its_log(capfd):
    with pytest.raises(FrontendError, match="broadcast") as info:
        from_torch(_ShapeBug(), (torch.randn(2, 8),))
    _, err = capfd.readouterr()
    assert "fake_tensor" not in err and "Traceback" not in err
    log = info.value.torch_log
    assert log and any("fake_tensor" in line for line in log)
    assert "\n" not in str(info.value)


def test_what_torch_says_on_a_capture_that_works_is_printed_after_it():
    logger = logging.getLogger("torch._dynamo")
    seen = []

    class Seen(logging.StreamHandler):
        def emit(self, record):
            seen.append(record.getMessage())

    mine = Seen()
    old = logger.handlers
    logger.handlers = [mine]
    try:
        with held_torch_logs() as log:
            logger.warning("a warning from torch")
            assert seen == []  # held while the block runs
        assert len(log) == 1 and logger.handlers == [mine]
        log.replay()
        assert seen == ["a warning from torch"]
    finally:
        logger.handlers = old


def test_levels_and_files_are_kept_as_they_were(tmp_path):
    logger = logging.getLogger("torch._inductor")
    to_file = logging.FileHandler(tmp_path / "log.txt")
    loud = logging.StreamHandler()
    loud.setLevel(logging.WARNING)
    old, level = logger.handlers, logger.level
    logger.handlers = [to_file, loud]
    logger.setLevel(logging.DEBUG)  # the logger passes info on; the stream handler does not
    try:
        with held_torch_logs() as log:
            logger.info("info: below the stream handler's level")
            logger.warning("kept")
        to_file.flush()
        assert "kept" in (tmp_path / "log.txt").read_text()  # a file still gets its records
        assert [line.split(": ", 1)[1] for line in log.lines()] == ["kept"]
    finally:
        logger.handlers = old
        logger.setLevel(level)
        to_file.close()


def test_a_logging_loop_is_capped():
    logger = logging.getLogger("torch")
    with held_torch_logs() as log:
        for i in range(MAX_KEPT + 5):
            logger.warning("line %d", i)
    assert len(log) == MAX_KEPT
    assert log.lines()[-1] == "... and 5 more records"
