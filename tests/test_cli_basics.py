"""The CLI turns user errors into one line and a non-zero exit."""

from fedtopic import __version__
from fedtopic.cli.main import main


def test_version_prints(capsys):
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == __version__


def test_unknown_command_is_usage_error(capsys):
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert "No such command" in err
