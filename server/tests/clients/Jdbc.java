// Connects to dfanon-server with pgJDBC, as a Java program or a BI tool does, and prints
// what it sees as JSON lines, one per step:
//   {"step": "...", "rows": [[...], ...]}  or  {"step": "...", "error": "..."}
//
// Usage: java -cp postgresql.jar Jdbc.java <port> <user> <password> <release> <sql> <value>... [-- <sql> <value>...]...
//        java -cp postgresql.jar Jdbc.java <port> <user> <password> <release> --file <statements.sql>
//
// The steps: the DatabaseMetaData listings (product, schemas, tables, the release's
// columns, its primary keys, the type list), then each <sql> as a PreparedStatement whose
// `?` markers are bound in order to the values after it ("int:5" with setInt,
// "double:1.0" with setDouble, any other with setString), statements separated by "--";
// or each statement of a file (see runFile).

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

public class Jdbc {
    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }

    /// The rows of `rs`, the columns `columns` (1-based) of each, as text.
    static String rows(ResultSet rs, int... columns) throws SQLException {
        StringBuilder out = new StringBuilder("[");
        int count = rs.getMetaData().getColumnCount();
        boolean first = true;
        while (rs.next()) {
            out.append(first ? "[" : ",[");
            first = false;
            int[] which = columns;
            if (which.length == 0) {
                which = new int[count];
                for (int i = 0; i < count; i++) {
                    which[i] = i + 1;
                }
            }
            for (int i = 0; i < which.length; i++) {
                if (i > 0) {
                    out.append(',');
                }
                Object value = rs.getObject(which[i]);
                out.append(quote(value == null ? "" : value.toString()));
            }
            out.append(']');
        }
        rs.close();
        return out.append(']').toString();
    }

    interface Step {
        String run() throws SQLException;
    }

    static void step(String name, Step step) {
        String line;
        try {
            line = "{\"step\": " + quote(name) + ", \"rows\": " + step.run() + "}";
        } catch (SQLException e) {
            line = "{\"step\": " + quote(name) + ", \"error\": " + quote(e.getMessage()) + "}";
        }
        System.out.println(line);
        System.out.flush();
    }

    /// Runs `sql` as a PreparedStatement with `values` ("int4:5", "int8:5", "float8:1.5",
    /// "text:abc"; a value "query:<sql>" after the type is that query's first value).
    static String run(Connection conn, String sql, List<String> values) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int i = 0; i < values.size(); i++) {
                String[] typed = values.get(i).split(":", 2);
                String value = typed[1];
                if (value.startsWith("query:")) {
                    try (PreparedStatement q = conn.prepareStatement(value.substring(6));
                            ResultSet rs = q.executeQuery()) {
                        rs.next();
                        value = rs.getString(1);
                    }
                }
                switch (typed[0]) {
                    case "int4": ps.setInt(i + 1, Integer.parseInt(value)); break;
                    case "int8": ps.setLong(i + 1, Long.parseLong(value)); break;
                    case "float8": ps.setDouble(i + 1, Double.parseDouble(value)); break;
                    default: ps.setString(i + 1, value);
                }
            }
            return ps.execute() ? rows(ps.getResultSet()) : "[]";
        }
    }

    /// Runs the statements of `path`: blocks separated by blank lines, each a comment line
    /// "-- <name> <what>", an optional "-- params: <value> | <value>" line and the
    /// statement, whose $1, $2, … become the PreparedStatement's markers.
    static void runFile(Connection conn, String path) throws Exception {
        String text = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(path)), "UTF-8");
        for (String block : text.split("\n\s*\n")) {
            String name = null;
            List<String> values = new ArrayList<>();
            StringBuilder sql = new StringBuilder();
            for (String line : block.split("\n")) {
                if (line.startsWith("-- params: ")) {
                    for (String value : line.substring(11).split(" \\| ")) {
                        values.add(value.trim());
                    }
                } else if (line.startsWith("-- ") && name == null) {
                    name = line.substring(3).split(" ")[0];
                } else if (!line.startsWith("--")) {
                    sql.append(line).append('\n');
                }
            }
            if (name == null || sql.toString().trim().isEmpty()) {
                continue;
            }
            String statement = sql.toString().trim().replaceAll("\\$\\d+", "?");
            step(name, () -> run(conn, statement, values));
        }
    }

    public static void main(String[] args) throws Exception {
        String port = args[0];
        String user = args[1];
        String password = args[2];
        String release = args[3];
        Properties props = new Properties();
        props.setProperty("user", user);
        props.setProperty("password", password);
        props.setProperty("sslmode", "disable");
        props.setProperty("connectTimeout", "20");
        String url = "jdbc:postgresql://127.0.0.1:" + port + "/datafusion";
        try (Connection conn = DriverManager.getConnection(url, props)) {
            DatabaseMetaData meta = conn.getMetaData();
            step("product", () -> "[[" + quote(meta.getDatabaseProductName()) + ","
                    + quote(meta.getDatabaseProductVersion()) + "]]");
            step("schemas", () -> rows(meta.getSchemas(), 1));
            step("tables", () -> rows(meta.getTables(null, null, "%", new String[] {"TABLE", "VIEW"}), 2, 3));
            step("columns", () -> rows(meta.getColumns(null, null, release, "%"), 4, 6));
            step("primary_keys", () -> rows(meta.getPrimaryKeys(null, null, release)));
            step("type_info", () -> {
                ResultSet rs = meta.getTypeInfo();
                int n = 0;
                while (rs.next()) {
                    n++;
                }
                rs.close();
                return "[[\"" + n + "\"]]";
            });
            if (args.length > 5 && args[4].equals("--file")) {
                runFile(conn, args[5]);
                return;
            }
            // Statements, each followed by its values, separated by "--".
            List<List<String>> statements = new ArrayList<>();
            List<String> current = null;
            for (int i = 4; i < args.length; i++) {
                if (current == null || args[i].equals("--")) {
                    current = new ArrayList<>();
                    statements.add(current);
                    if (args[i].equals("--")) {
                        continue;
                    }
                }
                current.add(args[i]);
            }
            for (List<String> statement : statements) {
                String sql = statement.get(0);
                List<String> values = new ArrayList<>();
                for (String value : statement.subList(1, statement.size())) {
                    values.add(value.startsWith("int:") ? "int4:" + value.substring(4)
                            : value.startsWith("double:") ? "float8:" + value.substring(7)
                            : "text:" + value);
                }
                step(sql, () -> run(conn, sql, values));
            }
        }
    }
}
