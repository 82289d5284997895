"""``ds config show | get KEY | set KEY VALUE | validate``: the home's ``config.yaml``
through the loader's own validation (:mod:`ds_events.config_edit`)."""

from __future__ import annotations

import json

import click

from ds_events.home import Home

from .common import cli, emit_json, json_option, out, pass_home

__all__ = ["config", "show", "get", "set_", "validate"]


@cli.group()
def config() -> None:
    """The home's config.yaml: show the effective config, read or write one key, validate.

    Example: ds config set runner.max_attempts 5
    """


@config.command()
@json_option
@pass_home
def show(home: Home, as_json: bool) -> None:
    """The effective config: every key, defaults filled in (YAML; --json for JSON).

    Example: ds config show --json
    """
    from ds_events.config_edit import effective

    value = effective(home.config())
    if as_json:
        emit_json(value)
        return
    import yaml

    out(yaml.safe_dump(value, sort_keys=False, allow_unicode=True).rstrip("\n"))


@config.command()
@click.argument("key")
@json_option
@pass_home
def get(home: Home, key: str, as_json: bool) -> None:
    """The effective value of a dotted KEY (a default when the file does not set it);
    an unknown key is bad_config, as in the file.

    Example: ds config get runner.max_attempts
    """
    from ds_events.config_edit import get_value

    value = get_value(home.config(), key, home.config_path)
    if as_json or isinstance(value, (dict, list)) or value is None or isinstance(value, bool):
        emit_json(value)
    else:
        out(str(value))


@config.command("set")
@click.argument("key")
@click.argument("value")
@json_option
@pass_home
def set_(home: Home, key: str, value: str, as_json: bool) -> None:
    """Set a dotted KEY to VALUE (read as YAML: 5, true, gpt-5, '[codex, exec]'; null
    restores the default) in DS_HOME/config.yaml, keeping the other keys.

    The new file is checked by the loader before it is written (atomically): a value or
    key the loader would refuse is bad_config and the file is not touched. Comments are
    kept when the key already has a one-line value or is added to an existing block
    section; otherwise the file is rewritten from its content and its comments are lost
    (the answer says which: comments_kept).

    Example: ds config set runner.commands.codex '[/opt/node/bin/codex]'
    """
    from ds_events.config_edit import parse_value, set_value

    result = set_value(home.config_path, key, parse_value(value))
    if as_json:
        emit_json({"key": result.key, "value": result.value, "file": result.file, "comments_kept": result.comments_kept})
        return
    kept = "" if result.comments_kept else " (rewritten: its comments were not kept)"
    out(f"{result.key} = {json.dumps(result.value, ensure_ascii=False)} in {result.file}{kept}")


@config.command()
@json_option
@pass_home
def validate(home: Home, as_json: bool) -> None:
    """Check config.yaml as every command reads it: exit 0 when valid, else 1 with the
    loader's bad_config message.

    Example: ds config validate
    """
    from ds_events.config import parse_config
    from ds_events.errors import Invalid

    path = home.config_path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    try:
        parse_config(text, path)
    except Invalid as exc:
        if not as_json:
            raise
        emit_json({"valid": False, **exc.to_dict()})
        raise SystemExit(1) from None
    if as_json:
        emit_json({"valid": True, "file": str(path)})
    else:
        out(f"{path} is valid" + ("" if path.is_file() else " (absent: every default)"))
