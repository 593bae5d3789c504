"""``tokensmith completion bash|zsh``: a shell completion script made from the parser
itself (commands, their options, and file names for their arguments), so that it never
falls behind the commands. Install with ``eval "$(tokensmith completion bash)"`` in
``~/.bashrc`` (zsh: ``eval "$(tokensmith completion zsh)"`` after ``compinit``)."""

from __future__ import annotations

import argparse
import shlex
from typing import Any


def _commands(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each command's name -> its option strings."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sorted(o for a in p._actions for o in a.option_strings)
            for name, p in sub.choices.items()}


def bash_script(parser: argparse.ArgumentParser) -> str:
    commands = _commands(parser)
    cases = "\n".join(
        f"        {shlex.quote(name)}) opts={shlex.quote(' '.join(opts))} ;;"
        for name, opts in commands.items())
    names = " ".join(commands)
    return f"""# bash completion for tokensmith (made by `tokensmith completion bash`)
_tokensmith() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} cmd=${{COMP_WORDS[1]}} opts=""
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "{names} --help --version" -- "$cur"))
        return
    fi
    case "$cmd" in
{cases}
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -o filenames -F _tokensmith tokensmith
"""


def zsh_script(parser: argparse.ArgumentParser) -> str:
    # zsh runs bash completion functions through bashcompinit
    return ("# zsh completion for tokensmith (made by `tokensmith completion zsh`)\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(parser))


def cmd_completion(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    print(bash_script(parser) if args.shell == "bash" else zsh_script(parser), end="")
    return 0


def add_command(sub: Any, formatter: Any, parser: argparse.ArgumentParser) -> None:
    """Add ``completion`` to ``sub``, the commands of ``parser`` (complete when it runs)."""
    p = sub.add_parser(
        "completion", help="print a shell completion script (bash, zsh)",
        description="Print a completion script for the tokensmith command. Add "
                    "`eval \"$(tokensmith completion bash)\"` to ~/.bashrc (or the zsh "
                    "line to ~/.zshrc).",
        formatter_class=formatter,
    )
    p.add_argument("shell", choices=("bash", "zsh"))
    p.set_defaults(func=lambda args: cmd_completion(args, parser))
