"""The soak's clients against dfanon-server: idle sockets, idle logins and querying clients
at once, and the latency the querying clients see.

Usage: python soak.py <host> <port> <user> <password> <idle_sockets> <settle_seconds>
                      <idle_logins> <querying_clients> <queries_each> <statement>

1. Opens <idle_sockets> TCP connections that never speak (kept open to the end), then
   waits <settle_seconds> (the server's login timeout closes those it holds).
2. Logs in <idle_logins> psycopg connections that then say nothing (kept open to the end).
3. Runs <querying_clients> threads, each with its own psycopg connection, running
   <statement> <queries_each> times; each query is timed from its send to its last row.

Prints one JSON line: {"sockets": n opened, "logins": n logged in, "login_errors": [...],
"queries": n answered, "errors": [...], "p50_ms": x, "p99_ms": y, "max_ms": z}.
"""

import json
import socket
import sys
import threading
import time

import psycopg


def main():
    host, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    idle_sockets, settle, idle_logins, clients, each = (int(a) for a in sys.argv[5:10])
    statement = sys.argv[10]

    def connect():
        return psycopg.connect(
            host=host, port=port, user=user, password=password, dbname="datafusion",
            autocommit=True, connect_timeout=60,
        )

    sockets = []
    for _ in range(idle_sockets):
        try:
            sockets.append(socket.create_connection((host, port), timeout=5))
        except OSError:
            pass
    time.sleep(settle)

    logins, login_errors = [], []
    for _ in range(idle_logins):
        try:
            logins.append(connect())
        except Exception as e:  # noqa: BLE001 - reported, not raised
            login_errors.append(str(e).strip()[:200])

    latencies, errors, lock = [], [], threading.Lock()

    def query():
        try:
            conn = connect()
        except Exception as e:  # noqa: BLE001
            with lock:
                errors.append(str(e).strip()[:200])
            return
        with conn:
            for _ in range(each):
                started = time.monotonic()
                try:
                    conn.execute(statement).fetchall()
                except Exception as e:  # noqa: BLE001
                    with lock:
                        errors.append(str(e).strip()[:200])
                    continue
                with lock:
                    latencies.append((time.monotonic() - started) * 1000)

    threads = [threading.Thread(target=query) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    latencies.sort()

    def at(q):
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1) if latencies else None

    print(json.dumps({
        "sockets": len(sockets),
        "logins": len(logins),
        "login_errors": sorted(set(login_errors)),
        "queries": len(latencies),
        "errors": sorted(set(errors)),
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
        "max_ms": round(latencies[-1], 1) if latencies else None,
    }))
    for conn in logins:
        conn.close()
    for s in sockets:
        s.close()


if __name__ == "__main__":
    main()
