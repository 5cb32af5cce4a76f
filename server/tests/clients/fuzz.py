"""Fuzzes dfanon-server with statements from a public user, through a real client.

Usage: python fuzz.py <psycopg|adbc> <host> <port> <user> <password> <seed> <count> [seconds]

Statements start from a corpus of what analysts and their tools send (releases, published
tables, catalog queries, the statements a public user is refused) and are mutated at the
level of tokens and characters (deleted, repeated, swapped, replaced by edge values,
spliced together). Each is run; an error is an expected outcome, a lost connection is not.
After an error the connection is probed with `SELECT 1`; if the probe fails too the
connection was lost: the statement is recorded and the client connects again.

Prints one JSON object: {"statements", "rows", "errors", "lost": [statements], "seconds"}.
The run is reproducible from its seed (the server's random draws aside). Stops after
`count` statements or `seconds` seconds, whichever comes first.
"""

import json
import random
import re
import sys
import time

from clients import CONNECT, execute

RELEASE = (
    "anonymize('nps', method => 'dp_histogram', qi => 'age, sex, los, surgery, location', "
    "informative => 'disease', epsilon => 1.0, levels => 'age=2, los=1, location=1')"
)

# The owner's IPA release: public users name only the source and the method.
OWNERS_IPA = "anonymize('nps', method => 'ipa')"

CORPUS = [
    f"SELECT age, COUNT(*) AS patients FROM {RELEASE} WHERE sex = 'M' AND surgery = 'N' "
    "AND disease LIKE 'I6%' GROUP BY age ORDER BY age",
    f"SELECT * FROM {RELEASE.replace('anonymize(', 'anonymize_metadata(')}",
    f"SELECT gen_mid(los), gen_lower(age), gen_upper(age) FROM {RELEASE} LIMIT 3",
    f"SELECT * FROM {OWNERS_IPA.replace('anonymize(', 'anonymize_interval_means(')}",
    f"SELECT gen_mid(los), COUNT(*) FROM {OWNERS_IPA} GROUP BY 1",
    "SELECT * FROM anonymize('nps', method => 'dp_histogram', qi => 'age:nps_hierarchy_age, "
    "sex', informative => 'disease', epsilon => 0.5, levels => 'age=2, sex=0')",
    "SELECT COUNT(*) FROM anonymize('nps', method => 'ipa', qi => 'age, sex', epsilon => 2)",
    "SELECT * FROM privacy_budget()",
    "SELECT name FROM anonymize_help() LIMIT 5",
    "SELECT * FROM nps_hierarchy_age LIMIT 5",
    "SELECT COUNT(*) FROM nps_hierarchy_disease",
    "SELECT * FROM interval_hierarchy('0..100', '10', '50') LIMIT 3",
    "SELECT * FROM top_bottom_hierarchy('0..120', 10, 90, '20') LIMIT 3",
    "SELECT COUNT(*) FROM nps_demo(1000, 3)",
    "SELECT * FROM nps_demo(rows => 10)",
    "SELECT * FROM upa_truthful('a', 'b')",
    "SELECT * FROM anonymize_diagnostics('nps', method => 'ipa', qi => 'age')",
    "SELECT * FROM anonymize_assess('nps', qi => 'age, sex')",
    "SELECT * FROM anonymize('nps', method => 'ipa', qi => 'age', seed => 1)",
    "SELECT * FROM anonymize('nps', method => 'kanon', qi => 'age, sex', k => 5)",
    "SELECT * FROM anonymize('nps', method => 'ipa', qi => 'age', epsilon => 1e-300)",
    "SELECT * FROM nps",
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM information_schema.columns WHERE table_name = 'nps'",
    "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
    "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'v') ORDER BY 1",
    "SELECT version()",
    "SELECT current_database(), current_schema()",
    "SHOW TABLES",
    "SHOW ALL",
    "SHOW datestyle",
    "EXPLAIN SELECT * FROM nps_hierarchy_sex",
    f"EXPLAIN ANALYZE SELECT COUNT(*) FROM {RELEASE}",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "DECLARE c CURSOR FOR SELECT 1",
    "FETCH 1 FROM c",
    "CLOSE c",
    "SET extra_float_digits = 3",
    "SET TIME ZONE 'UTC'",
    "SET anonymize.epsilon_budget = 100",
    "SET datafusion.execution.batch_size = 1",
    "RESET ALL",
    "CREATE TABLE x AS SELECT 1",
    "CREATE VIEW v AS SELECT * FROM nps",
    "CREATE EXTERNAL TABLE e STORED AS CSV LOCATION '/etc/passwd'",
    "DROP TABLE nps",
    "INSERT INTO nps_hierarchy_sex VALUES ('X', '*')",
    "UPDATE nps_hierarchy_sex SET v = 'Y'",
    "DELETE FROM nps_hierarchy_sex",
    "COPY nps TO '/tmp/stolen.csv'",
    "COPY (SELECT 1) TO STDOUT",
    "PREPARE p AS SELECT 1",
    "EXECUTE p",
    "SELECT 1 / 0",
    "SELECT CAST('x' AS INT)",
    "SELECT COUNT(*) FROM generate_series(1, 100000)",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 50) "
    "SELECT COUNT(*) FROM r",
    "SELECT a.v FROM nps_hierarchy_sex a JOIN nps_hierarchy_sex b ON a.v = b.v",
    "SELECT $1",
    "VALUES (1, 'a'), (2, 'b')",
    "",
    ";",
]

EDGE_TOKENS = [
    "0", "-1", "1e308", "1e-308", "-0.0", "9223372036854775807", "9223372036854775808",
    "18446744073709551616", "'NaN'", "'inf'", "NULL", "''", "'\\'", "'%'", "'*'", "'[0-5)'",
    "'age:nps_hierarchy_age'", "'age, age'", "'..'", "'0..'", "=>", "(", ")", ",", ";",
    "*", "'", '"', "--", "/*", "$1", "::", "::INT", "[", "]", "'🙂'", "'\u202e'",
    "seed", "epsilon", "qi", "method", "levels", "k", "max_release_rows", "person",
    "informative", "budget_split", "'upa'", "'kanon'", "'safepub'", "'microaggregation'",
    "'dp_histogram'", "anonymize", "anonymize_metadata", "nps_demo", "privacy_budget",
    "SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "UNION", "JOIN", "LATERAL",
    "WITH", "LIMIT", "OFFSET", "CAST", "AS", "NOT", "IN", "EXISTS", "CREATE", "DROP",
]

TOKEN = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|=>|::|[A-Za-z_][A-Za-z0-9_.]*|\d+(?:\.\d+)?(?:e-?\d+)?|\s+|.")


def tokens(sql):
    return TOKEN.findall(sql)


def mutate(rng, sql):
    """One mutation of `sql`."""
    parts = tokens(sql)
    choice = rng.randrange(9)
    if choice <= 4 and parts:
        i = rng.randrange(len(parts))
        if choice == 0:
            del parts[i]
        elif choice == 1:
            parts.insert(i, parts[i])
        elif choice == 2:
            j = rng.randrange(len(parts))
            parts[i], parts[j] = parts[j], parts[i]
        elif choice == 3:
            parts[i] = rng.choice(EDGE_TOKENS)
        else:
            parts.insert(i, " " + rng.choice(EDGE_TOKENS) + " ")
        return "".join(parts)
    if choice == 5 and sql:
        i = rng.randrange(len(sql))
        return sql[:i] + chr(rng.choice([0x20, 0x27, 0x28, 0x29, 0x2C, 0x3B, 0x5C, 0xE9,
                                          0x2028, 0xFFFD, rng.randrange(0x21, 0x7F)])) + sql[i:]
    if choice == 6 and sql:
        return sql[: rng.randrange(len(sql))]
    if choice == 7:
        other = rng.choice(CORPUS)
        return sql[: rng.randrange(len(sql) + 1)] + other[rng.randrange(len(other) + 1):]
    return sql + "; " + rng.choice(CORPUS)


def statement(rng):
    sql = rng.choice(CORPUS)
    if rng.random() < 0.15:
        return sql
    for _ in range(rng.randint(1, 4)):
        sql = mutate(rng, sql)
    return sql


def alive(conn):
    """Whether the connection still answers (a failed transaction is ended first)."""
    # psycopg says so itself (other clients have no such flags).
    if getattr(conn, "broken", None) is True or getattr(conn, "closed", None) is True:
        return False
    execute(conn, "ROLLBACK")
    outcome = execute(conn, "SELECT 1")
    return outcome.get("rows") == [["1"]]


def main():
    kind, host, port, user, password, seed, count, *rest = sys.argv[1:]
    seconds = float(rest[0]) if rest else float("inf")
    connect = lambda: CONNECT[kind](host, int(port), user, password)  # noqa: E731
    rng = random.Random(int(seed))
    conn = connect()
    summary = {"statements": 0, "rows": 0, "errors": 0, "lost": []}
    start = time.monotonic()
    while summary["statements"] < int(count) and time.monotonic() - start < seconds:
        sql = statement(rng)
        outcome = execute(conn, sql)
        summary["statements"] += 1
        if "rows" in outcome:
            summary["rows"] += 1
            continue
        summary["errors"] += 1
        if not alive(conn):
            summary["lost"].append({"statement": sql, "error": outcome["error"]})
            try:
                conn.close()
            except Exception:
                pass
            conn = connect()
    summary["seconds"] = round(time.monotonic() - start, 1)
    conn.close()
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
