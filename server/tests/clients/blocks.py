"""Transaction blocks and declared cursors through psycopg 3 as applications use them:
a connection left in psycopg's default mode (each first statement opens a block), a named
(server-side) cursor, rollback() and commit(). Prints one JSON object with what the
client saw.

Usage: python blocks.py <host> <port> <user> <password> <query> [<change>]

<query> is read through a named cursor, two rows at a time; <change> (the owner's) is a
statement that changes tables, tried inside a block and again after it.
"""

import json
import sys

import psycopg


def main():
    host, port, user, password, query, *change = sys.argv[1:]
    seen = {}
    notices = []
    conn = psycopg.connect(
        host=host, port=int(port), user=user, password=password, dbname="datafusion",
        connect_timeout=20,
    )
    conn.add_notice_handler(lambda n: notices.append([n.severity, n.message_primary]))
    with conn:
        # A named cursor: DECLARE, a description of its portal, FETCH FORWARD 2 at a time.
        with conn.cursor(name="visits_cursor") as cur:
            cur.itersize = 2
            cur.execute(query)
            seen["columns"] = [d.name for d in cur.description]
            seen["first_two"] = [[str(v) for v in row] for row in cur.fetchmany(2)]
            seen["rest"] = [[str(v) for v in row] for row in cur.fetchall()]
        seen["status_in_block"] = conn.info.transaction_status.name
        conn.rollback()
        seen["status_after_rollback"] = conn.info.transaction_status.name
        seen["rollback_notices"] = notices[:]
        if change:
            try:
                conn.execute(change[0])
                seen["change_in_block"] = "ran"
            except psycopg.Error as e:
                seen["change_in_block"] = [e.sqlstate, e.diag.message_primary]
            conn.rollback()
            conn.autocommit = True
            conn.execute(change[0])
            seen["change_outside"] = "ran"
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
