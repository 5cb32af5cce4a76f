"""Asks dfanon-server's Flight SQL port for its metadata as BI tools do, and prints one
JSON object: what each call answered.

Usage: python flight_metadata.py <host> <port> <user> <password> <table>

ADBC (adbc-driver-flightsql) makes the calls it has: GetSqlInfo (adbc_get_info),
GetTableTypes, GetCatalogs/GetDbSchemas/GetTables with schemas (adbc_get_objects) and
GetTables for one table's schema. pyarrow's Flight client makes the two it lacks,
GetPrimaryKeys and GetXdbcTypeInfo, as Flight SQL commands packed in protobuf Any messages.
"""

import json
import sys


def varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def command(name, body=b""):
    """A Flight SQL command, as a protobuf Any message."""
    url = ("type.googleapis.com/arrow.flight.protocol.sql." + name).encode()
    return field(1, url) + field(2, body)


def flight_call(client, options, name, body=b""):
    from pyarrow import flight

    descriptor = flight.FlightDescriptor.for_command(command(name, body))
    info = client.get_flight_info(descriptor, options)
    table = client.do_get(info.endpoints[0].ticket, options).read_all()
    return {"columns": table.column_names, "rows": table.num_rows,
            "first": [str(v) for v in table.slice(0, 1).to_pylist()]}


def main():
    host, port, user, password, table = sys.argv[1:]
    import adbc_driver_flightsql.dbapi as adbc
    from pyarrow import flight

    out = {}
    with adbc.connect(f"grpc://{host}:{port}",
                      db_kwargs={"username": user, "password": password}) as conn:
        info = conn.adbc_get_info()
        out["info"] = {k: str(v) for k, v in info.items()}
        out["table_types"] = conn.adbc_get_table_types()
        objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
        out["objects"] = sorted(
            t["table_name"]
            for catalog in objects
            for schema in catalog["catalog_db_schemas"] or []
            for t in schema["db_schema_tables"] or []
        )
        out["table_schema"] = conn.adbc_get_table_schema(table).names
    client = flight.FlightClient(f"grpc://{host}:{port}")
    options = flight.FlightCallOptions(headers=[client.authenticate_basic_token(user, password)])
    out["primary_keys"] = flight_call(client, options, "CommandGetPrimaryKeys", field(3, table.encode()))
    out["xdbc_type_info"] = flight_call(client, options, "CommandGetXdbcTypeInfo")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
