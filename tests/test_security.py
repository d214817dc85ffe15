"""Security: a storage password from the environment is never written anywhere; checkpoints load as weights only
and a pickle bomb in one is refused; YAML never builds Python objects; `sweep sql` only reads the results root;
a builder import path is imported only when the user names it.

Related tests elsewhere: test_sweep_proxy.py::test_two_workers_on_postgresql_and_the_password_is_never_written
(the sweep's own folder and the trials), test_queries.py (`sweep sql` refuses COPY, CREATE, INSERT, ATTACH, PRAGMA,
EXPORT, INSTALL, SET, UPDATE, DELETE, two statements, and read_csv outside the root).
"""
from __future__ import annotations

import ast
import base64
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import optuna
import pandas as pd
import pytest
import torch
import yaml
from PIL import Image

from tests.sweep_helpers import file_tree, run_sweep, spec_dict, sweep_cmd, sweep_env, write_spec

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for folder in ("proxies", "trainer", "sweep", "tests", "benchmarks", "scripts")
                 for p in (REPO / folder).rglob("*.py"))
PASSWORD_ENV = "SWEEP_TEST_PGPASS"


# ------------------------------------------------------------------ the password stays in the environment

def readable_forms(path: Path) -> list[bytes]:
    """The file's bytes, and what compression hides from a byte search: Parquet cells, PNG text chunks,
    and the PNGs embedded in an HTML page."""
    data = path.read_bytes()
    forms = [data]
    if path.suffix == ".parquet":
        forms.append(pd.read_parquet(path).to_json(orient="records", date_format="iso").encode())
    if path.suffix == ".png":
        forms.append(json.dumps(Image.open(path).info, default=str).encode())
    if path.suffix == ".html":
        for embedded in re.findall(rb"data:image/png;base64,([A-Za-z0-9+/=]+)", data):
            forms.append(json.dumps(Image.open(io.BytesIO(base64.b64decode(embedded))).info, default=str).encode())
    return forms


def test_a_storage_password_from_the_environment_is_in_no_file_output_or_attribute(tmp_path, postgres, run_cli,
                                                                                     monkeypatch):
    """Sweep with ${VAR} in the URL, then verify, transfer, launch, status, report, export, results and sql with
    --storage-password-env: the password (raw or URL-quoted) is in no file under the root, in no output of
    theirs, and in no user or system attribute of any study or trial in the database."""
    secrets = [postgres.password.encode(), quote(postgres.password, safe="").encode()]
    templated = f"postgresql://{postgres.user}:${{{PASSWORD_ENV}}}@127.0.0.1:{postgres.port}/{postgres.database}"
    given = ("--storage", postgres.url, "--storage-password-env", PASSWORD_ENV)
    spec = write_spec(tmp_path, name="secret", trials=2, run={"steps": 10})
    env = sweep_env(tmp_path, **{PASSWORD_ENV: postgres.password})
    outputs = []

    def real(*args):
        done = run_sweep(tmp_path, *args, env=env)
        outputs.append(done.stdout + done.stderr)
        assert done.returncode == 0, done.stdout + done.stderr

    def in_process(*args):
        code, out, err = run_cli(*args)
        outputs.append(out + err)
        assert code == 0, out + err

    real("proxy", spec, "--width", "16", "--storage", templated)
    real("verify", spec, "--widths", "16,32", "--values", "2^-7,2^-6,2^-5", "--parametrizations", "mup", "--seeds", "1",
         "--refine", "0", *given)
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.setenv(PASSWORD_ENV, postgres.password)
    monkeypatch.chdir(tmp_path)
    in_process("transfer", spec, "--width", "32", *given)
    [transferred] = (tmp_path / "secret" / "transfer").glob("*.yaml")
    in_process("launch", transferred)
    in_process("status", "secret", "--format", "json")
    in_process("report", spec, *given)
    in_process("export", spec, *given)
    in_process("results", spec, *given, "--format", "json")
    in_process("sql", "SELECT * FROM trials", "--study", str(spec), *given, "--format", "parquet",
               "--out", tmp_path / "secret" / "trials.parquet")

    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    kinds = {p.suffix for p in written} | {p.name for p in written}
    assert {".parquet", ".png", ".html", ".yaml", ".json", "launch.json", "report.html", "summary.json"} <= kinds
    for path in written:
        for form in readable_forms(path):
            assert not any(secret in form for secret in secrets), path
    for text in outputs:
        assert not any(secret.decode() in text for secret in secrets)
    password = quote(postgres.password, safe="")
    storage = f"postgresql+psycopg://{postgres.user}:{password}@127.0.0.1:{postgres.port}/sweep"
    studies = {s.study_name: optuna.load_study(study_name=s.study_name, storage=storage)
               for s in optuna.get_all_study_summaries(storage) if s.study_name.startswith("secret")}
    assert len(studies) == 3  # the sweep, and verify's study per width
    for study in studies.values():
        attributes = json.dumps([study.user_attrs, study._storage.get_study_system_attrs(study._study_id),
                                 [[t.user_attrs, t.system_attrs] for t in study.get_trials(deepcopy=False)]])
        assert not any(secret.decode() in attributes for secret in secrets)
    recorded = [t.user_attrs["config"] for t in studies["secret-w16-mup"].trials]  # the storage is recorded, redacted
    assert all(f"storage: postgresql://sweep:***@127.0.0.1:{postgres.port}/sweep" in c for c in recorded), recorded


# ------------------------------------------------------------------ storage URLs: a password only from the environment

def every_char_quoted(text: str) -> str:
    return "".join(f"%{b:02X}" for b in text.encode())


SECRET_IN_URL = {  # a password everywhere a driver would take one from; {pw} raw, {q} URL-quoted, {port} the server's
    "userinfo": "postgresql://sweep:{q}@127.0.0.1:{port}/sweep",
    "userinfo-every-char-percent-encoded": "postgresql://sweep:{pct}@127.0.0.1:{port}/sweep",
    "query-password": "postgresql://sweep@127.0.0.1:{port}/sweep?password={q}",
    "libpq-host-and-password": "postgresql://sweep@/sweep?host=127.0.0.1&port={port}&password={q}",
    "query-password-twice": "postgresql://sweep@127.0.0.1:{port}/sweep?password={q}&password={q}",
    "query-key-upper-case": "postgresql://sweep@127.0.0.1:{port}/sweep?PASSWORD={q}",
    "query-key-percent-encoded": "postgresql://sweep@127.0.0.1:{port}/sweep?pass%77ord={q}",
    "query-key-every-char-encoded": "postgresql://sweep@127.0.0.1:{port}/sweep?%70%61%73%73%77%6F%72%64={q}",
    "query-key-double-encoded": "postgresql://sweep@127.0.0.1:{port}/sweep?pass%2577ord={q}",
    "sslpassword": "postgresql://sweep@127.0.0.1:{port}/sweep?sslpassword={q}",
    "passfile": "postgresql://sweep@127.0.0.1:{port}/sweep?passfile={passfile}",
    "options": "postgresql://sweep@127.0.0.1:{port}/sweep?options=-c%20password%3D{q}",
    "dbname-conninfo": "postgresql://sweep@127.0.0.1:{port}/sweep?dbname=host%3D127.0.0.1%20password%3D{q}",
    "dbname-nested-url": "postgresql://sweep@127.0.0.1:{port}/sweep?dbname={nested}",
    "database-conninfo": "postgresql://sweep@127.0.0.1:{port}/dbname%3Dsweep%20password%3D{q}",
    "user-with-encoded-colon": "postgresql://sweep%3A{q}@127.0.0.1:{port}/sweep",
    "mysql-passwd": "mysql://sweep@127.0.0.1:{port}/sweep?passwd={q}",
    "malformed-single-slash": "postgresql:/sweep:{pw}@127.0.0.1:{port}/sweep",
    "not-a-url-at-all": "{pw}",
}


def secret_url(form: str, postgres, passfile: Path) -> str:
    pw, q = postgres.password, quote(postgres.password, safe="")
    nested = quote(f"postgresql://sweep:{q}@127.0.0.1:{postgres.port}/sweep", safe="")
    return SECRET_IN_URL[form].format(pw=pw, q=q, pct=every_char_quoted(pw), port=postgres.port, nested=nested,
                                      passfile=passfile)


def secret_forms(secret: str) -> list[str]:
    """The password as it may be shown: raw, URL-quoted, every character quoted."""
    return [secret, quote(secret, safe=""), every_char_quoted(secret)]


def studies_in(postgres, database: str = "sweep", user: str = "sweep", password: str | None = None) -> list[str]:
    """The names of the Optuna studies in a database of the server (none when it has no Optuna tables)."""
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=postgres.port, dbname=database, user=user,
                         password=password or postgres.password) as con:
        if con.execute("SELECT to_regclass('public.studies')").fetchone()[0] is None:
            return []
        return [row[0] for row in con.execute("SELECT study_name FROM studies")]


@pytest.mark.parametrize("form", SECRET_IN_URL)
def test_a_password_anywhere_in_a_storage_url_is_refused_in_one_line_that_does_not_show_it(tmp_path, postgres, run_cli,
                                                                                           monkeypatch, form):
    """Each form would reach the live server (libpq takes a password from each of them): every one is refused
    before connecting, the line shows no part of the password, nothing is written, no study is created."""
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{postgres.port}:sweep:sweep:{postgres.password}\n")
    passfile.chmod(0o600)
    spec = write_spec(tmp_path, name=f"refused-{form}")
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli("proxy", spec, "--width", "16", "--storage", secret_url(form, postgres, passfile))

    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: storage: "), (out, err)
    assert not any(secret in err for secret in secret_forms(postgres.password)), err
    assert file_tree(tmp_path) == before
    assert f"refused-{form}-w16-mup" not in studies_in(postgres)


@pytest.mark.parametrize("args", [
    ("proxy", "{spec}", "--width", "16"), ("verify", "{spec}", "--widths", "16,32", "--values", "2^-7,2^-6,2^-5"),
    ("transfer", "{spec}", "--width", "32"), ("results", "{spec}"), ("report", "{spec}"), ("export", "{spec}"),
    ("sql", "SELECT * FROM trials", "--study", "{spec}")], ids=lambda args: args[0])
@pytest.mark.parametrize("where", ["flag", "spec"])
def test_every_command_refuses_a_password_in_the_query_given_by_flag_or_spec(tmp_path, run_cli, monkeypatch, args,
                                                                              where):
    secret = "s3cr@t:/#?pw"
    url = f"postgresql://sweep@/sweep?host=127.0.0.1&port=1&password={quote(secret, safe='')}"
    spec = write_spec(tmp_path, name="leaky", **({"storage": url} if where == "spec" else {}))
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli(*(a.format(spec=spec) for a in args), *(("--storage", url) if where == "flag" else ()))

    assert code == 2 and err.count("\n") == 1 and "storage: the URL's query names a password" in err, (out, err)
    assert not any(s in out + err for s in secret_forms(secret))
    assert file_tree(tmp_path) == before


TRICKY = "x@127.0.0.1:1/evil#?{}%41 pw"  # unescaped, the host would become 127.0.0.1, the port 1


@pytest.fixture(scope="module")
def tricky_role(postgres):
    """A role whose password holds every character that delimits a URL, owning its own database."""
    postgres.admin(f"CREATE ROLE tricky LOGIN PASSWORD '{TRICKY}'")
    postgres.admin("CREATE DATABASE tricky OWNER tricky")
    return f"postgresql://tricky:${{{PASSWORD_ENV}}}@127.0.0.1:{postgres.port}/tricky"


def test_a_templated_password_with_url_characters_reaches_the_right_server_and_is_recorded_nowhere(
        tmp_path, postgres, tricky_role):
    """${VAR} whose value holds @ / : # ? { } % and a space: the sweep reaches the server and database the URL
    names (quoted, the value cannot move the host), and no form of the value is in any output, file or attribute."""
    spec = write_spec(tmp_path, name="tricky", trials=1, run={"steps": 4})
    env = sweep_env(tmp_path, **{PASSWORD_ENV: TRICKY})
    outputs = []
    for args in (("proxy", spec, "--width", "16", "--storage", tricky_role),
                 ("results", spec, "--storage", tricky_role.replace(f":${{{PASSWORD_ENV}}}", ""),
                  "--storage-password-env", PASSWORD_ENV)):
        done = run_sweep(tmp_path, *args, env=env)
        outputs.append(done.stdout + done.stderr)
        assert done.returncode == 0, done.stdout + done.stderr

    assert studies_in(postgres, "tricky", "tricky", TRICKY) == ["tricky-w16-mup"]
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert not any(s.encode() in form for s in secret_forms(TRICKY) for form in readable_forms(path)), path
    assert not any(s in text for s in secret_forms(TRICKY) for text in outputs)
    [config] = (tmp_path / "tricky" / "runs").glob("*/config.yaml")
    recorded = yaml.safe_load(config.read_text())["provenance"]["storage"]
    assert recorded == f"postgresql://tricky:***@127.0.0.1:{postgres.port}/tricky"


@pytest.mark.parametrize("how", ["template", "password-env"])
def test_a_wrong_password_from_the_environment_is_one_line_that_does_not_show_it(tmp_path, postgres, tricky_role,
                                                                                 run_cli, monkeypatch, how):
    wrong = TRICKY.replace("pw", "wrong")
    monkeypatch.setenv(PASSWORD_ENV, wrong)
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    spec = write_spec(tmp_path, name="wrong")
    given = (("--storage", tricky_role) if how == "template" else
             ("--storage", tricky_role.replace(f":${{{PASSWORD_ENV}}}", ""), "--storage-password-env", PASSWORD_ENV))
    before = file_tree(tmp_path)

    code, out, err = run_cli("proxy", spec, "--width", "16", *given)

    assert code == 2 and err.count("\n") == 1 and "password authentication failed" in err, (out, err)
    secret = ':***' if how == 'template' else ''
    assert f"cannot open postgresql://tricky{secret}@127.0.0.1:{postgres.port}/tricky" in err
    assert not any(s in out + err for s in secret_forms(wrong))
    assert file_tree(tmp_path) == before


# ------------------------------------------------------------------ read-only commands write nothing

def tree_bytes(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` with its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes() for p in sorted(folder.rglob("*"))}


def optuna_db(path: Path) -> None:
    """A current Optuna storage holding sweep `ro`'s study at width 16 with one COMPLETE trial."""
    storage = optuna.storages.RDBStorage(f"sqlite:///{path}")
    study = optuna.create_study(storage=storage, study_name="ro-w16-mup")
    for key, value in {"spec_name": "ro", "width": 16, "parametrization": "mup"}.items():
        study.set_user_attr(key, value)
    study.enqueue_trial({"optimizer.lr": 0.01})
    study.optimize(lambda t: t.suggest_float("optimizer.lr", 1e-3, 1e-1, log=True), n_trials=1)
    storage.remove_session()
    storage.engine.dispose()


def foreign_db(path: Path) -> None:
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE notes (body TEXT)")
        con.execute("INSERT INTO notes VALUES ('mine, not Optuna''s')")
    con.close()


def edited_optuna_db(statement: str):
    def make(path: Path) -> None:
        optuna_db(path)
        with sqlite3.connect(path) as con:
            con.execute(statement)
        con.close()
    return make


STORAGE_FILES = {  # what a folder's optuna.db may be
    "current": optuna_db,
    "sqlite-not-optunas": foreign_db,
    "not-sqlite": lambda path: path.write_bytes(b"these are my notes, not a database\n" * 20),
    "empty": lambda path: path.write_bytes(b""),
    "older-schema": edited_optuna_db("UPDATE alembic_version SET version_num = 'v3.0.0.d'"),
    "before-alembic": edited_optuna_db("DROP TABLE alembic_version"),
}
READ_ONLY = {  # each read-only command on sweep `ro`; those that open its storage say so in one line when they cannot
    "sql-study": ("sql", "SELECT count(*) AS n FROM trials", "--study", "ro", "--format", "csv"),
    "sql-root": ("sql", "SELECT count(*) AS n FROM trials", "--format", "csv"),
    "results": ("results", "ro"), "report": ("report", "ro"), "export": ("export", "ro"),
    "status": ("status", "ro"), "compare": ("compare", "ro-w16-mup#0", "--study", "ro"),
}
OPENS_THE_STORAGE = {"sql-study", "sql-root", "results", "report", "export"}


@pytest.mark.parametrize("command", READ_ONLY)
@pytest.mark.parametrize("kind", STORAGE_FILES)
def test_read_only_commands_leave_any_optuna_db_byte_for_byte_as_it_was(tmp_path, run_cli, monkeypatch, kind, command):
    """On a file that is not Optuna's, an empty or an older one: one line, exit 2, the file untouched (on main,
    `sql` added Optuna's tables to it); on a current one they read it, and still write nothing into it."""
    root = tmp_path / "results"
    (root / "ro").mkdir(parents=True)
    STORAGE_FILES[kind](root / "ro" / "optuna.db")
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    before = tree_bytes(root / "ro")

    code, out, err = run_cli(*READ_ONLY[command])

    after = tree_bytes(root / "ro")
    assert after["optuna.db"] == before["optuna.db"] and set(after) >= set(before)
    if command in ("report", "export") and code == 0:  # their own output, next to the storage
        assert {k for k in set(after) - set(before)} <= {"report.html", "export", *(k for k in after if
                                                                                  k.startswith("export/"))}, after
    else:
        assert after == before
    if kind == "current":
        assert code == 0 or command == "compare", (out, err)  # compare: no run to show is one line
    elif command in OPENS_THE_STORAGE:
        assert code == 2 and err.count("\n") == 1 and err.startswith("error: storage: "), (out, err)
        assert str(root / "ro" / "optuna.db") in err
    if code:
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (out, err)


@pytest.mark.parametrize("storage", ["sqlite:///{root}/nowhere/optuna.db", "journal:{root}/nowhere/journal.log",
                                     "{root}/nowhere/journal.jsonl"], ids=["sqlite", "journal", "journal-suffix"])
@pytest.mark.parametrize("command", ["sql", "results", "report", "export"])
def test_read_only_commands_on_a_missing_storage_create_nothing(tmp_path, run_cli, monkeypatch, command, storage):
    root = tmp_path / "results"
    root.mkdir()
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    url = storage.format(root=root)
    args = ("sql", "SELECT * FROM trials") if command == "sql" else (command, "ro")
    before = tree_bytes(tmp_path)

    code, out, err = run_cli(*args, "--storage", url)

    assert code == 2 and err.count("\n") == 1 and err.startswith("error: storage: ") and "does not exist" in err, err
    assert tree_bytes(tmp_path) == before and not (root / "nowhere").exists()


@pytest.mark.parametrize("command", ["sql", "results", "report", "export"])
def test_read_only_commands_add_no_table_to_a_postgresql_database_without_optunas(tmp_path, postgres, run_cli,
                                                                                  monkeypatch, command):
    import psycopg

    database = f"bare_{command}"
    postgres.admin(f"CREATE DATABASE {database} OWNER sweep")
    monkeypatch.setenv(PASSWORD_ENV, postgres.password)
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    args = ("sql", "SELECT * FROM trials") if command == "sql" else (command, "ro")
    url = f"postgresql://sweep@127.0.0.1:{postgres.port}/{database}"
    before = file_tree(tmp_path)

    code, out, err = run_cli(*args, "--storage", url, "--storage-password-env", PASSWORD_ENV)

    assert code == 2 and err.count("\n") == 1, (out, err)
    assert err.startswith(f"error: storage: {url} is not an Optuna storage (no table alembic_version"), err
    with psycopg.connect(host="127.0.0.1", port=postgres.port, dbname=database, user="sweep",
                         password=postgres.password) as con:
        assert con.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
    assert file_tree(tmp_path) == before


# ------------------------------------------------------------------ checkpoints: weights only

class Bomb:
    """Unpickling it runs a shell command (what a malicious checkpoint would do)."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def test_a_pickle_bomb_checkpoint_is_refused_on_resume_and_never_runs(tmp_path, run_cli, monkeypatch):
    marker = tmp_path / "the-bomb-went-off"
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
        "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 20000}},
        "batch_size": 4, "steps": 4, "output": {"root": str(tmp_path / "results"), "study": "s", "run": "r"}}))
    bomb = tmp_path / "results" / "s" / "runs" / "r" / "checkpoints" / "step-000000002.pt"
    bomb.parent.mkdir(parents=True)
    torch.save({"model": Bomb(f"touch {marker}"), "step": 2}, bomb)
    # the file is live: a plain unpickling (in another process) runs it
    subprocess.run([sys.executable, "-c", f"import torch; torch.load({str(bomb)!r}, weights_only=False)"],
                   capture_output=True, timeout=120)
    assert marker.exists()
    marker.unlink()
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli("train", config, "--resume")

    assert code == 2 and err.count("\n") == 1, (out, err)
    assert err.startswith(f"error: checkpoint: {bomb} is refused: not loadable with weights_only=True"), err
    # what it refused
    assert "unsupported GLOBAL posix.system" in err or "Unsupported global: GLOBAL posix.system" in err
    assert not marker.exists() and file_tree(tmp_path) == before


def calls(tree: ast.AST, owner: str, names: tuple[str, ...]):
    """Every call `owner.NAME(...)` in a parsed source."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == owner:
            yield node


def keyword(node: ast.Call, name: str):
    return next((k.value for k in node.keywords if k.arg == name), None)


def test_every_torch_load_in_the_repository_is_weights_only():
    loads, unsafe = 0, []
    for path in SOURCES:
        source = path.read_text()
        assert not re.search(r"from torch import[^\n]*\bload\b", source), path
        for node in calls(ast.parse(source), "torch", ("load",)):
            loads += 1
            flag = keyword(node, "weights_only")
            if not (isinstance(flag, ast.Constant) and flag.value is True):
                unsafe.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert loads >= 2 and unsafe == []  # trainer/checkpoint.py and the tests that read checkpoints
    for path in (p for p in SOURCES if p.parts[len(REPO.parts)] in ("proxies", "trainer", "sweep")):
        assert not list(calls(ast.parse(path.read_text()), "pickle", ("load", "loads"))), path


# ------------------------------------------------------------------ YAML: data only

PYTHON_TAGS = ["!!python/object/apply:os.system ['touch {marker}']",
               "!!python/object/new:subprocess.Popen [['touch', '{marker}']]"]


@pytest.mark.parametrize("tag", PYTHON_TAGS, ids=["apply-os.system", "new-Popen"])
@pytest.mark.parametrize("command", ["proxy", "train"])
def test_a_python_tag_in_a_spec_or_a_config_is_one_line_exit_2_and_never_runs(tmp_path, run_cli, monkeypatch, tag,
                                                                              command):
    marker = tmp_path / "the-yaml-ran"
    tagged = tag.format(marker=marker)
    if command == "proxy":
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec_dict()) + f"seeds_per_trial: {tagged}\n")
        args = ["proxy", path, "--width", "16"]
    else:
        path = tmp_path / "run.yaml"
        path.write_text(f"steps: 4\nseed: {tagged}\noutput: {{root: {tmp_path / 'results'}}}\n")
        args = ["train", path]
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli(*args)

    assert code == 2 and err.count("\n") == 1, (out, err)
    assert "not valid YAML" in err and "could not determine a constructor for the tag" in err
    assert not marker.exists() and file_tree(tmp_path) == before


def test_every_yaml_load_in_the_repository_uses_a_safe_loader():
    from trainer import yaml_io

    assert issubclass(yaml_io.Loader, yaml.SafeLoader) and not issubclass(yaml_io.Loader, yaml.FullLoader)
    loads = 0
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        assert not list(calls(tree, "yaml", ("unsafe_load", "unsafe_load_all", "full_load", "full_load_all"))), path
        for node in calls(tree, "yaml", ("load", "load_all")):
            loads += 1
            loader = keyword(node, "Loader") or (node.args[1] if len(node.args) > 1 else None)
            safe = (isinstance(loader, ast.Attribute) and loader.attr in ("SafeLoader", "CSafeLoader")) or (
                isinstance(loader, ast.Name) and loader.id == "Loader" and path == REPO / "trainer" / "yaml_io.py")
            assert safe, f"{path.relative_to(REPO)}:{node.lineno}"
    assert loads >= 1


# ------------------------------------------------------------------ sweep sql reads only the results root

def test_sql_reads_a_parquet_file_under_the_root_but_none_outside_it(tmp_path, run_cli, monkeypatch):
    root, outside = tmp_path / "results", tmp_path / "elsewhere"
    for folder in (root / "mine", outside):
        folder.mkdir(parents=True)
        pd.DataFrame({"answer": [42]}).to_parquet(folder / "table.parquet")
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("sql", f"SELECT answer FROM read_parquet('{root / 'mine' / 'table.parquet'}')",
                             "--format", "csv")
    assert code == 0 and pd.read_csv(io.StringIO(out)).to_dict("list") == {"answer": [42]}, err  # readable there
    before = file_tree(tmp_path)
    for statement in (f"SELECT * FROM read_parquet('{outside / 'table.parquet'}')",
                      f"SELECT * FROM '{outside / 'table.parquet'}'",
                      f"SELECT * FROM read_parquet('{tmp_path}/*/table.parquet')",
                      "SELECT * FROM read_text('/etc/hostname')"):
        code, out, err = run_cli("sql", statement, "--format", "csv")
        assert code == 2 and out == "" and err.count("\n") == 1, (statement, err)
        assert err.startswith("error: sql: ") and ("Permission Error" in err or "disabled" in err), err
    assert file_tree(tmp_path) == before


# ------------------------------------------------------------------ builders: imported only when named

EVIL = '''"""Someone else's model module: importing it leaves a mark."""
from pathlib import Path

Path({marker!r}).touch()

from proxies.gpt import gpt as build  # a working μP builder, so their sweep ran
'''


@pytest.fixture(scope="module")
def foreign_study(tmp_path_factory):
    """A sweep someone else ran with their own builder `evilmod:build`: its study folder holds the module, the
    Optuna storage, runs (one with a launch record) and curves. Returns (root, marker), the marker removed."""
    root = tmp_path_factory.mktemp("foreign")
    folder, marker = root / "evil", root / "evilmod-was-imported"
    folder.mkdir()
    (folder / "evilmod.py").write_text(EVIL.format(marker=str(marker)))
    spec = write_spec(folder, name="evil", trials=2, run={"model": {"name": "evilmod:build"}})
    env = sweep_env(root, PYTHONPATH=f"{REPO}{os.pathsep}{folder}")
    done = subprocess.run(sweep_cmd("proxy", spec, "--width", "16"), env=env, cwd=root, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    assert marker.exists()  # they named it: it was imported for their sweep
    from sweep.cluster.processes import this_process
    from sweep.runs.record import write_record
    from trainer.config import RunConfig

    run = RunConfig.load(next((folder / "runs").glob("*/config.yaml")))
    write_record(run, {"backend": "local", "job": f"pid {os.getpid()}", "process": this_process(os.getpid())})
    marker.unlink()
    return root, marker


@pytest.fixture
def inside(foreign_study, run_cli, monkeypatch):
    """`sweep …` in this process, working in the foreign study folder with its module on the import path."""
    root, marker = foreign_study
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(root / "evil")
    monkeypatch.syspath_prepend(str(root / "evil"))
    assert "evilmod" not in sys.modules and not marker.exists()
    yield run_cli
    sys.modules.pop("evilmod", None)  # each test starts clean, whatever the last one did
    marker.unlink(missing_ok=True)


@pytest.mark.parametrize("args", [
    ("status", "evil"), ("report", "evil"), ("export", "evil"), ("results", "evil", "--format", "json"),
    ("sql", "SELECT model, count(*) FROM runs GROUP BY model", "--study", "evil"), ("compare", "evil-w16-mup#0"),
], ids=lambda args: args[0])
def test_reading_a_study_folder_never_imports_the_builder_it_names(foreign_study, inside, args):
    code, out, err = inside(*args)
    assert code == 0, err
    assert not foreign_study[1].exists() and "evilmod" not in sys.modules


def test_transfer_with_a_spec_that_does_not_name_the_stored_builder_refuses_it(foreign_study, inside, tmp_path):
    mine = write_spec(tmp_path, name="evil")  # my spec, pointed at their folder: it names gpt
    code, out, err = inside("transfer", mine, "--width", "32")
    assert not foreign_study[1].exists() and "evilmod" not in sys.modules
    assert code == 2 and err.count("\n") == 1, err
    assert "model.name: trial" in err and "names the builder 'evilmod:build', which the spec you gave does not" in err
    # naming it in the spec passed is consent: the same command with their spec imports it (in its own process)
    root = foreign_study[0]
    theirs = sweep_cmd("transfer", root / "evil" / "spec.yaml", "--width", "32", "--out", tmp_path / "t.yaml")
    done = subprocess.run(theirs, env=sweep_env(root, PYTHONPATH=f"{REPO}{os.pathsep}{root / 'evil'}"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert foreign_study[1].exists()


def test_verify_never_takes_a_builder_from_the_stored_best_trial(foreign_study, inside, tmp_path):
    """Their storage, edited so the best trial's recorded values set model.name: my spec's verify refuses."""
    root, marker = foreign_study
    copy = tmp_path / "evil"
    copy.mkdir()
    (copy / "optuna.db").write_bytes((root / "evil" / "optuna.db").read_bytes())
    with sqlite3.connect(copy / "optuna.db") as con:
        values = {"optimizer.lr": 0.01, "model.name": "evilmod:build"}
        con.execute("UPDATE trial_user_attributes SET value_json = ? WHERE key = 'values'", (json.dumps(values),))
    mine = write_spec(tmp_path, name="evil")
    # --backend slurm refuses a SQLite storage before anything runs: a second net should the builder check go
    code, out, err = inside("verify", mine, "--storage", f"sqlite:///{copy / 'optuna.db'}", "--widths", "16,32",
                            "--values", "2^-7,2^-6,2^-5", "--backend", "slurm")
    assert not marker.exists() and "evilmod" not in sys.modules
    assert code == 2 and err.count("\n") == 1, err
    assert "model.name: the settings from evil-w16-mup#" in err and "'evilmod:build'" in err


def test_transfer_writes_under_the_results_root_whatever_root_the_stored_trial_names(tmp_path, run_cli, monkeypatch):
    """A storage whose best trial's config says `output.root: ELSEWHERE`: the transferred config is written under
    $SWEEP_ROOT, and the full run it describes writes there too; nothing appears ELSEWHERE."""
    from trainer.config import RunConfig

    root, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    (root / "tiny").mkdir(parents=True)
    run = spec_dict()["run"]
    stored = RunConfig.parse({**run, "model": {**run["model"], "width": 16}, "optimizer": {"lr": 0.01},
                              "output": {"root": str(elsewhere), "study": "tiny", "kind": "proxy", "run": "x"}})
    study = optuna.create_study(storage=f"sqlite:///{root / 'tiny' / 'optuna.db'}", study_name="tiny-w16-mup")
    for key, value in {"spec_name": "tiny", "width": 16, "parametrization": "mup"}.items():
        study.set_user_attr(key, value)
    trial = study.ask()
    trial.set_user_attr("config", stored.to_yaml())
    study.tell(trial, 1.0)
    spec = write_spec(tmp_path)
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(tmp_path)

    code, out, err = run_cli("transfer", spec, "--width", "32")

    assert code == 0, out + err
    [written] = (root / "tiny" / "transfer").glob("*.yaml")
    assert RunConfig.load(written).output.root == str(root.resolve())
    assert not elsewhere.exists()


@pytest.mark.parametrize("argv", [
    # found by the fuzzer: click echoed the extra arguments it refused, a storage URL's password among them
    ["results", "tiny", "--no-plots", "--", "--storage", "postgresql://u@h/db?host=127.0.0.1&password=pw-Fuzz7q@x"],
    ["results", "tiny", "--format", "postgresql://u:pw-Fuzz7q@h/db"],
])
def test_a_usage_error_never_echoes_a_password_it_was_given(argv, tmp_path):
    result = subprocess.run([sys.executable, "-m", "sweep", *argv], capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "SWEEP_ROOT": str(tmp_path / "root")})
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "pw-Fuzz7q" not in result.stderr + result.stdout and "***" in result.stderr


@pytest.mark.parametrize("command", ["doctor", "train", "recipe", "proxy"])
@pytest.mark.parametrize("text", ["root:x:0:0:TOKEN-s3cr3t:/root:/bin/bash\nfoo: [unclosed\n",
                                  "password=TOKEN-s3cr3t and more\n"])
def test_a_file_given_by_mistake_is_refused_without_its_text_on_the_screen(tmp_path, run_cli, monkeypatch, command,
                                                                           text):
    """Found by an outside tester: `sweep recipe /etc/passwd` refused the file in one line quoting ~300 characters
    of it (PyYAML's message shows the offending line; pydantic's echoes a document that is no mapping)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "secret.txt"
    path.write_text(text)
    args = [command, path] + (["--to", "torch"] if command == "recipe" else [])
    code, out, err = run_cli(*args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "s3cr3t" not in out + err and "TOKEN" not in out + err, err


@pytest.mark.parametrize("path", ["https://bob:S3CRETPW@example.com/corpus.txt",
                                  "https://example.com/corpus.txt?token=S3CRETPW"])
def test_a_password_in_a_data_path_is_not_echoed_by_the_line_that_refuses_it(tmp_path, run_cli, monkeypatch, path):
    """Found by an outside tester: `data.path: https://bob:PW@…?token=T` was refused as a missing file, its line
    quoting the path whole; the path, joined to the spec's folder, reads `https:/bob:PW@…` (its slashes collapsed)."""
    monkeypatch.chdir(tmp_path)
    content = spec_dict()
    content["run"]["data"] = {"kind": "text", "path": path, "seq_len": content["run"]["data"].get("seq_len", 16)}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(content))
    code, out, err = run_cli("proxy", spec, "--width", "16")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "data.path" in err, err
    assert "S3CRETPW" not in out + err and "***" in err, err
