"""`token` and `db`: the API's bearer tokens and the store's schema."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from railtrace.cli.common import DataOpt, console, err, fail, reported, settings_of

token_app = typer.Typer(
    help="Bearer tokens for the HTTP API: every route but /healthz and /readyz needs one. "
    "Kept hashed in api.tokens_file; the API notices changes without a restart.",
    no_args_is_help=True,
)
db_app = typer.Typer(
    help="The store's schema: versioned migrations, applied to embedded chDB (--data) or to the "
    "ClickHouse server of store.clickhouse_url.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(token_app, name="token")
    app.add_typer(db_app, name="db")


class TokenScope(StrEnum):
    read = "read"
    admin = "admin"


@token_app.command("create")
def token_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="Who or what uses it: a person, Grafana, a script.")],
    scope: Annotated[
        list[TokenScope],
        typer.Option(help="read: every GET route. admin: also list and revoke tokens."),
    ] = [TokenScope.read],  # noqa: B006 - typer reads the default, nobody mutates it
    expires_days: Annotated[
        int | None, typer.Option(min=1, max=3650, help="Days until it stops working.")
    ] = None,
    quiet: Annotated[bool, typer.Option(help="Print only the token, for scripts.")] = False,
) -> None:
    """Create a token and print it; it is shown this once and stored only as a hash."""
    from datetime import timedelta

    from railtrace.api.tokens import Scope, TokenBook, TokenFileError

    settings = settings_of(ctx)
    book = TokenBook(settings.api.tokens_file)
    expires = None if expires_days is None else timedelta(days=expires_days)
    try:
        token, info = book.issue(name, {Scope(s.value) for s in scope}, expires)
    except (TokenFileError, ValueError) as exc:
        raise fail(str(exc)) from exc
    if quiet:
        print(token)
        return
    until = "never expires" if info.expires_at is None else f"expires {info.expires_at:%Y-%m-%d}"
    err.print(
        f"token {info.token_id} for {info.name!r}: {', '.join(sorted(info.scopes))}, {until}.\n"
        f"Kept hashed in {settings.api.tokens_file}; copy it now, it is not shown again:"
    )
    print(token)


@token_app.command("list")
def token_list(ctx: typer.Context) -> None:
    """The tokens in api.tokens_file: id, name, scopes, dates (never the secrets)."""
    from rich.table import Table

    from railtrace.api.tokens import TokenBook, TokenFileError

    settings = settings_of(ctx)
    try:
        tokens = TokenBook(settings.api.tokens_file).tokens()
    except TokenFileError as exc:
        raise fail(str(exc)) from exc
    if not tokens:
        err.print(f"no tokens in {settings.api.tokens_file}; `railtrace token create` makes one")
        return
    table = Table("id", "name", "scopes", "created", "expires")
    for t in tokens:
        expires = "never" if t.expires_at is None else f"{t.expires_at:%Y-%m-%d %H:%M}"
        table.add_row(
            t.token_id,
            t.name,
            ",".join(sorted(t.scopes)),
            f"{t.created_at:%Y-%m-%d %H:%M}",
            expires,
        )
    console.print(table)


@token_app.command("revoke")
def token_revoke(
    ctx: typer.Context, token_id: Annotated[str, typer.Argument(help="The id `token list` shows.")]
) -> None:
    """Revoke a token; every API reading the same file refuses it from its next request."""
    from railtrace.api.tokens import TokenBook, TokenFileError

    settings = settings_of(ctx)
    try:
        gone = TokenBook(settings.api.tokens_file).revoke(token_id)
    except TokenFileError as exc:
        raise fail(str(exc)) from exc
    if gone is None:
        raise fail(
            f"no token '{token_id}' in {settings.api.tokens_file}; see `railtrace token list`", 2
        )
    console.print(f"revoked token {gone.token_id} ({gone.name})")


@db_app.command("migrate")
def db_migrate(ctx: typer.Context, data: DataOpt = None) -> None:
    """Apply the schema migrations the store lacks (safe to run again: applies nothing)."""
    from railtrace.compose.stores import open_for_schema

    with reported():
        store = open_for_schema(settings_of(ctx, data))
    try:
        applied = store.migrate()
    finally:
        store.close()
    if not applied:
        console.print("The schema is up to date; nothing to apply.")
    for m in applied:
        console.print(f"applied {m.version:>4}  {m.name}")


@db_app.command("status")
def db_status(ctx: typer.Context, data: DataOpt = None) -> None:
    """List the schema migrations and which the store has; exits 3 while some are pending."""
    from railtrace.compose.stores import open_for_schema

    settings = settings_of(ctx, data)
    if not settings.store.clickhouse_url and not settings.store.data_dir.is_dir():
        raise fail(f"no data directory {settings.store.data_dir}; run `railtrace db migrate`")
    with reported():
        store = open_for_schema(settings)
    try:
        found = store.migration_status()
    finally:
        store.close()
    for st in found:
        when = f"applied {st.applied_at} UTC" if st.applied_at else "[yellow]pending[/]"
        console.print(f"{st.version:>4}  {st.name:<55} {when}")
    if any(st.applied_at is None for st in found):
        raise typer.Exit(3)
