"""The command line's basics: ``--version``, help on every flag in plain text, ``| head`` exits quietly,
defaults shown as what they mean, and no flag that changes nothing."""
from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from audit.runner import DEFAULT_SPARK_THRESHOLD
from kcontroller.cli import build_parser, main


def _actions(parser: argparse.ArgumentParser, path: tuple = ("kcontroller",)):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), None, helps.get(name), sub
                yield from _actions(sub, (*path, name))
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, action, action.help, parser


def test_every_command_and_flag_has_help():
    missing = [" ".join(path) + (f" {action.option_strings or action.dest}" if action else "")
               for path, action, text, _ in _actions(build_parser()) if not text]
    assert missing == []


def test_help_is_plain_text():
    parser = build_parser()
    texts = [parser.format_help()] + [sub.format_help() for _, action, _, sub in _actions(parser) if action is None]
    for text in texts:
        assert "``" not in text and ":class:" not in text and ":func:" not in text
    assert "kcontroller.cli" not in parser.format_help()


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("kcontroller ")


def test_the_spark_threshold_default_says_what_it_is():
    audit = next(sub for path, action, _, sub in _actions(build_parser()) if action is None and path[-1] == "audit")
    text = " ".join(audit.format_help().split())
    assert str(DEFAULT_SPARK_THRESHOLD) not in text
    assert "a twentieth of this machine's memory" in text and "GiB here" in text


def test_demo_refuses_the_flag_that_changed_nothing(tmp_path, capsys):
    assert main(["demo", "--unclean-leader-election-enable", "--log-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "was removed" in err and "examples/unclean-election-on.yaml" in err
    assert not (tmp_path / "d").exists()


def test_log_piped_into_head_exits_quietly(tmp_path):
    log = tmp_path / "big"
    assert main(["new-cluster", str(log), "--topic", "big:2000:3"]) == 0
    done = subprocess.run(f"'{sys.executable}' -m kcontroller log '{log}' | head -1; exit ${{PIPESTATUS[0]}}",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=300)
    assert done.stdout.count("\n") == 1
    assert (done.returncode, done.stderr) == (0, "")
