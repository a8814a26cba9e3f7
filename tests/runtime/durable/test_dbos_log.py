"""DBOS's own log goes to its file, never to the terminal (issue 28 item 8; docs/durable.md
"DBOS's own log"). Pins what agentflow reaches into: DBOS adds its stderr handler (named
``__dbos_console_log_handler__``) only to a ``dbos`` logger without handlers."""

from __future__ import annotations

import logging

from agentflow.runtime.durable.dbos_launch import (
    DBOS_CONSOLE_HANDLER,
    LOG_HANDLER,
    _log_to_file,
    log_file,
)


def test_dbos_adds_its_console_handler_only_to_a_logger_without_handlers(tmp_path):
    from dbos import _logger

    logger = logging.getLogger("dbos")
    saved = list(logger.handlers), logger.propagate
    try:
        for h in list(logger.handlers):
            logger.removeHandler(h)
        _logger.init_logger()  # what DBOS() does first
        assert [h.name for h in logger.handlers] == [DBOS_CONSOLE_HANDLER]
        url = f"sqlite:///{tmp_path / 'db' / 'durable.sqlite'}"
        _log_to_file(url)  # what launch() does before DBOS(): the console handler goes
        _logger.init_logger()
        assert [h.name for h in logger.handlers] == [LOG_HANDLER]
        assert logger.propagate is False
        logger.warning("a message of DBOS's")
        assert "a message of DBOS's" in (tmp_path / "db" / "dbos.log").read_text()
        assert log_file(url) == tmp_path / "db" / "dbos.log"
    finally:
        for h in list(logger.handlers):
            logger.removeHandler(h)
            h.close()
        for h in saved[0]:
            logger.addHandler(h)
        logger.propagate = saved[1]


def test_asyncios_own_reports_in_a_durable_process_go_to_the_same_file(tmp_path):
    background = logging.getLogger("asyncio")
    saved = list(background.handlers)
    try:
        url = f"sqlite:///{tmp_path / 'durable.sqlite'}"
        _log_to_file(url)
        _log_to_file(url)  # launched again in the same process: one handler, not two
        assert [h.name for h in background.handlers].count(LOG_HANDLER) == 1
        background.error("Task exception was never retrieved")
        assert "never retrieved" in (tmp_path / "dbos.log").read_text()
    finally:
        for h in list(background.handlers):
            if h not in saved:
                background.removeHandler(h)
                h.close()
