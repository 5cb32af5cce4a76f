"""Runs statements against dfanon-server with a real client library and prints the
outcome of each as one JSON line: {"rows": [[...], ...]} or {"error": "..."}.

Usage: python clients.py <psycopg|psycopg-bound|adbc|adbc-bound> <host> <port> <user> <password> <statement>...

psycopg 3 speaks the PostgreSQL wire protocol (a ClientCursor inlines parameters, so
statements reach the server as text); adbc-driver-flightsql speaks Arrow Flight SQL and
logs in with a Basic handshake that returns a bearer token. Values are printed as text,
as psql prints them, so the three clients' rows compare directly.

psycopg-bound is psycopg with its default cursor, which binds parameters on the server
(a prepared statement): each statement gets the one parameter 'M' for its %s, or, when
the environment variable DFANON_PARAMS holds a JSON list of lists, the nth list for the
nth statement. DFANON_PREPARE=1 makes each a named prepared statement (prepare=True), so
that a statement sent twice is parsed once and bound twice.

adbc-bound is adbc-driver-flightsql with the same parameters bound through a Flight SQL
prepared statement (the values put as one Arrow row): each %s becomes $1, $2, … in order.

The environment variable DFANON_TLS_ROOT (a PEM file) makes both clients connect with
TLS and check the server's certificate against it.
"""

import json
import os
import sys


def text(value):
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def connect_psycopg(host, port, user, password):
    import psycopg

    tls = {}
    root = os.environ.get("DFANON_TLS_ROOT")
    if root:
        tls = {"sslmode": "verify-full", "sslrootcert": root}
    return psycopg.connect(
        host=host, port=port, user=user, password=password, dbname="datafusion",
        autocommit=True, cursor_factory=psycopg.ClientCursor, connect_timeout=20, **tls,
    )


def connect_adbc(host, port, user, password):
    import adbc_driver_flightsql.dbapi as flight

    kwargs = {"username": user, "password": password}
    scheme = "grpc"
    root = os.environ.get("DFANON_TLS_ROOT")
    if root:
        scheme = "grpc+tls"
        with open(root) as f:
            kwargs["adbc.flight.sql.client_option.tls_root_certs"] = f.read()
    return flight.connect(f"{scheme}://{host}:{port}", db_kwargs=kwargs)


def connect_psycopg_bound(host, port, user, password):
    import psycopg

    return psycopg.connect(
        host=host, port=port, user=user, password=password, dbname="datafusion",
        autocommit=True, connect_timeout=20,
    )


CONNECT = {
    "psycopg": connect_psycopg,
    "psycopg-bound": connect_psycopg_bound,
    "adbc": connect_adbc,
    "adbc-bound": connect_adbc,
}


def numbered(sql):
    """%s placeholders as $1, $2, ... in order."""
    parts = sql.split("%s")
    out = parts[0]
    for i, part in enumerate(parts[1:], start=1):
        out += f"${i}" + part
    return out


def execute(conn, sql, params=None, prepare=None):
    """The outcome of one statement: {"rows": ...} or {"error": ...}."""
    try:
        with conn.cursor() as cur:
            if prepare:
                cur.execute(sql, params, prepare=True)
            else:
                cur.execute(sql, params)
            rows = cur.fetchall() if cur.description else []
        return {"rows": [[text(v) for v in row] for row in rows]}
    except Exception as e:
        return {"error": str(e)}


def main():
    kind, host, port, user, password, *statements = sys.argv[1:]
    try:
        conn = CONNECT[kind](host, int(port), user, password)
    except Exception as e:  # the login itself failed
        for _ in statements:
            print(json.dumps({"error": str(e)}))
        return
    with conn:
        bound = kind in ("psycopg-bound", "adbc-bound")
        given = json.loads(os.environ.get("DFANON_PARAMS", "null"))
        prepare = bound and os.environ.get("DFANON_PREPARE") == "1"
        for i, sql in enumerate(statements):
            params = None
            if bound:
                params = tuple(given[i]) if given is not None else ("M",)
            if kind == "adbc-bound":
                sql = numbered(sql)
            print(json.dumps(execute(conn, sql, params, prepare)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
