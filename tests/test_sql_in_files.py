"""SQL lives in sql/ files: the package builds no statement in Python, the SQL that moved there
(v_runs' column types, configurations, a user's metric's columns) behaves as before, and the
few SQL texts Python still joins are lists of fragments from sql/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from evalstore import Store
from evalstore.analysis.configurations import configs
from evalstore.metrics.user import read_metric

PACKAGE = Path(__file__).resolve().parents[1] / "evalstore"

# the start of a statement that reads or changes data or the catalogue (not a transaction's
# begin/commit/rollback, a checkpoint or a setting, which stay in Python)
_STATEMENT = re.compile(
    r"^\s*(select\s|with\s+\w+\s+as\s*\(|insert\s+into\s|update\s+\S+\s+set\s|delete\s+from\s"
    r"|create\s|drop\s|alter\s|copy\s|attach\s|export\s+database\s|pivot\s)",
    re.IGNORECASE,
)
_RUNS_SQL = {"execute", "executemany", "sql", "query"}


def _text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, holes as {}
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def sql_built_in_python(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of each SQL statement a module writes itself: an f-string, a
    concatenation, a %- or .format()-formatted text that reads as a statement, or a constant
    statement handed to execute()/sql()."""
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        texts: list[ast.expr] = []
        if isinstance(node, ast.JoinedStr):
            texts.append(node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            texts += [node.left, node.right]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "format":
                texts.append(node.func.value)
            elif node.func.attr in _RUNS_SQL and node.args:
                texts.append(node.args[0])
        for expr in texts:
            text = _text(expr)
            if text is not None and _STATEMENT.match(text):
                found.add((expr.lineno, text.strip().splitlines()[0][:60]))
    return sorted(found)


def test_the_package_builds_no_sql_statement_in_python() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in sql_built_in_python(ast.parse(path.read_text(), str(path)))
    ]
    assert offenders == [], "SQL belongs in a sql/ file:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "source",
    [
        'con.execute(f"select * from ({text}) as q limit 0")',
        'con.execute("drop table if exists _raw")',
        'q = "select " + ", ".join(cols) + " from t"',
        'q = "delete from {} where x = 1".format(table)',
        'q = "insert into %s values (1)" % table',
        'q = f"""\n  WITH t AS (select 1) select * from t"""',
    ],
)
def test_the_rule_catches_sql_built_in_python(source: str) -> None:
    assert len(sql_built_in_python(ast.parse(source))) == 1


@pytest.mark.parametrize(
    "source",
    [
        'con.execute("begin transaction")',
        'con.execute("set memory_limit = $limit", {"limit": x})',
        "html = f'<select name=\"run\">{options}</select>'",
        'example = "select run from v_runs"  # text shown to a user, not run here',
        'con.execute(queries.template("store/v_runs", columns=c, values=v))',
    ],
)
def test_the_rule_leaves_other_text_alone(source: str) -> None:
    assert sql_built_in_python(ast.parse(source)) == []


# -- what moved: same behaviour ---------------------------------------------------------------


def _v_runs_types(store: Store) -> dict[str, str]:
    rows = store.con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_name = 'v_runs' and column_name like 'param_%'"
    ).fetchall()
    return {name: kind for name, kind in rows if name != "params"}


def test_v_runs_types_each_parameter_from_the_values_it_takes(tmp_path: Path) -> None:
    runs = {
        "a": {
            "n": 1,
            "x": 0.5,
            "big": 2**63,
            "flag": True,
            "mixed": 1,
            "none": None,
            "text": "t",
            "list": [1],
            'it\'s "q"': 1,
            "nb": None,
        },
        "b": {
            "n": 2,
            "x": None,
            "big": 1,
            "flag": None,
            "mixed": "one",
            "none": None,
            "text": "u",
            "list": [2],
            'it\'s "q"': 2.5,
            "nb": False,
        },
    }
    with Store(tmp_path / "s.duckdb") as store:
        for name, params in runs.items():
            store.ingest(
                {"group_id": [0, 0], "item_id": [0, 1], "score": [0.9, 0.1], "label": [1, -1]},
                task="retrieval",
                run=f"exp/{name}",
                params=params,
            )
        types = _v_runs_types(store)
        rows = {
            r["run"]: r
            for r in store.con.sql("select * from v_runs").pl().to_dicts()  # every column
        }
    assert types == {
        "param_n": "DOUBLE",
        "param_x": "DOUBLE",
        "param_big": "DOUBLE",
        "param_flag": "BOOLEAN",
        "param_nb": "BOOLEAN",
        "param_mixed": "VARCHAR",
        "param_none": "VARCHAR",  # only nulls: no type to take
        "param_text": "VARCHAR",
        "param_list": "VARCHAR",
        'param_it\'s "q"': "DOUBLE",
    }
    assert rows["exp/a"]["param_n"] == 1.0 and rows["exp/b"]["param_x"] is None
    assert rows["exp/a"]["param_flag"] is True and rows["exp/b"]["param_nb"] is False
    assert rows["exp/b"]["param_mixed"] == "one" and rows["exp/a"]["param_mixed"] == "1"
    assert rows["exp/a"]["param_list"] == "[1]" and rows["exp/b"]['param_it\'s "q"'] == 2.5


def test_configurations_bind_the_seed_and_the_keys(tmp_path: Path) -> None:
    # names a literal would have to escape: quotes, braces, a $ and a comment marker
    seed, key = "it's {seed}", 'lr"$keys -- x'
    with Store(tmp_path / "s.duckdb") as store:
        for i, (lr, s, other) in enumerate([(1, 0, "a"), (1, 1, "b"), (2, 0, "a")]):
            store.ingest(
                {"group_id": [0, 0], "item_id": [0, 1], "score": [0.9, 0.1], "label": [1, -1]},
                task="retrieval",
                run=f"exp/r{i}",
                params={key: lr, seed: s, "other": other},
            )
        every = configs(store, seed_param=seed).sort("run")
        by_key = configs(store, seed_param=seed, group_by=[key]).sort("run")
        view = store.con.execute("select count(*) from v_groups").fetchone()
    assert every["seed"].to_list() == ["0", "1", "0"]
    assert every["config"].to_list() == [
        f"{key}=1, other=a",
        f"{key}=1, other=b",
        f"{key}=2, other=a",
    ]
    assert by_key["config"].to_list() == [f"{key}=1", f"{key}=1", f"{key}=2"]
    assert by_key["config_key"].n_unique() == 2 and every["config_key"].n_unique() == 3
    assert view == (0,)  # no metric values yet; the view binds nothing and runs


def test_a_users_metric_columns_are_read_with_its_comments(tmp_path: Path) -> None:
    path = tmp_path / "m.sql"
    path.write_text(
        "-- metric: my_top\n-- tasks: retrieval\n-- direction: higher\n"
        "with\n-- @include lib/lists.sql\n"
        "select run_id, group_id, n_pos::double as value -- '{x}' and $not_a_param\n"
        "from lists\n"
    )
    assert read_metric(path).name == "my_top"
    path.write_text(path.read_text().replace("as value", "as v"))
    with pytest.raises(Exception, match="returns columns run_id, group_id, v"):
        read_metric(path)
