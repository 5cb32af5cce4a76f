"""Runs statements against dfanon-server with a real client library and prints the
outcome of each as one JSON line: {"rows": [[...], ...]} or {"error": "..."}.

Usage: python clients.py <psycopg|adbc> <host> <port> <user> <password> <statement>...

psycopg 3 speaks the PostgreSQL wire protocol (a ClientCursor inlines parameters, so
statements reach the server as text); adbc-driver-flightsql speaks Arrow Flight SQL and
logs in with a Basic handshake that returns a bearer token. Values are printed as text,
as psql prints them, so the three clients' rows compare directly.
"""

import json
import sys


def text(value):
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def run_psycopg(host, port, user, password, statements):
    import psycopg

    try:
        conn = psycopg.connect(
            host=host, port=port, user=user, password=password, dbname="datafusion",
            autocommit=True, cursor_factory=psycopg.ClientCursor, connect_timeout=20,
        )
    except Exception as e:  # the login itself failed
        for _ in statements:
            print(json.dumps({"error": str(e)}))
        return
    with conn:
        for sql in statements:
            try:
                with conn.cursor() as cur:
                    cur.execute(sql)
                    rows = cur.fetchall() if cur.description else []
                print(json.dumps({"rows": [[text(v) for v in row] for row in rows]}))
            except Exception as e:
                print(json.dumps({"error": str(e)}))


def run_adbc(host, port, user, password, statements):
    import adbc_driver_flightsql.dbapi as flight

    try:
        conn = flight.connect(
            f"grpc://{host}:{port}", db_kwargs={"username": user, "password": password}
        )
    except Exception as e:
        for _ in statements:
            print(json.dumps({"error": str(e)}))
        return
    with conn:
        for sql in statements:
            try:
                with conn.cursor() as cur:
                    cur.execute(sql)
                    rows = cur.fetchall()
                print(json.dumps({"rows": [[text(v) for v in row] for row in rows]}))
            except Exception as e:
                print(json.dumps({"error": str(e)}))


def main():
    kind, host, port, user, password, *statements = sys.argv[1:]
    run = {"psycopg": run_psycopg, "adbc": run_adbc}[kind]
    run(host, int(port), user, password, statements)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
