package dev.tether.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * A source check that every SQL statement of tether-jdbc's main code is a constant with {@code ?}
 * placeholders: in each source file, every operand concatenated to (or appended after) a string
 * literal that contains SQL must be another string literal, a ternary choosing between string
 * literals, or one of the reviewed expressions below, each of which yields a constant or a
 * validated number, never a caller's string. A new concatenation fails this test until it is
 * reviewed and listed here with its reason.
 */
class SqlSourceCheckTest {
  /** Reviewed non-literal operands of SQL text, with the reason each is safe. */
  static final Map<String, String> REVIEWED = Map.ofEntries(
      Map.entry("engine.skipLocked()",
          "StoreEngine constant (Acquisitions.candidatesSql): \" FOR UPDATE SKIP LOCKED\" on PostgreSQL, \"\" on SQLite"),
      Map.entry("engine.forUpdate()",
          "StoreEngine constant (LeaseOperations.lockHeld, OperatorActions.cancel): \" FOR UPDATE\" on PostgreSQL, \"\" on SQLite"),
      Map.entry("config.busyTimeout().toMillis()",
          "SqliteEngine: a long from validated TetherStoreConfig (PRAGMA takes no parameters)"),
      Map.entry("ITEM_COLUMNS",
          "MonitorQueries constant: the fixed column list of tether_work_items"),
      Map.entry("PICK_HEAD",
          "PostgresAcquisitions constant: the checks and the SKIP LOCKED pick shared by the one-statement acquisitions, up to its LIMIT"),
      Map.entry("PICK_TAIL",
          "PostgresAcquisitions constant: the rest of that pick (FOR UPDATE SKIP LOCKED, numbering)"),
      Map.entry("PENDING_COUNT",
          "Inserts constant: the two counts of a queue's pending items, one per partial index"),
      Map.entry("Inserts.PENDING_COUNT",
          "the same constant, from MonitorQueries"),
      Map.entry("pickLimit",
          "PostgresAcquisitions: an int >= 1 (the sizes of validated AcquireRequests) written as the LIMIT literal so that the generic plan knows it"),
      Map.entry("String.join(L, where)",
          "MonitorQueries: joins only the literal fragments \"queue = ?\", the every-status condition and OverviewQueries.statusTerm's literals"),
      Map.entry("LIST_COLUMNS",
          "OverviewQueries constant: the fixed column list of a listing (prefixes of input and error)"),
      Map.entry("columns",
          "OverviewQueries.window and newestOfEachStatus: LIST_COLUMNS, LIST_COLUMNS and a literal, the literal \"id\", or MonitorQueries.ITEM_COLUMNS"),
      Map.entry("alias",
          "OverviewQueries: an int loop index written as a subquery alias"),
      Map.entry("row",
          "OverviewQueries.countsOf: an int loop index written as the row key"),
      Map.entry("window(r, scan, LIST_COLUMNS + L)",
          "OverviewQueries.window: built only of literals and the reviewed operands above"),
      Map.entry("window(r, scan, L)",
          "OverviewQueries.window, likewise"),
      Map.entry("engine.bytesContain(L)",
          "StoreEngine constant on a literal column: \"instr(col, ?) > 0\" (SQLite), \"position(? in col) > 0\" (PostgreSQL)"),
      Map.entry("where.isEmpty() ? L : L + String.join(L, where)",
          "OverviewQueries.window: joins only the literal fragments \"queue = ?\", \"id < ?\" and statusTerm's literals"),
      Map.entry("statusTerm(STATUSES[alias])",
          "OverviewQueries.statusTerm: one of its literal status conditions, chosen by a WorkStatus"),
      Map.entry("statusTerm(WorkStatus.FAILED)",
          "ItemReads.FAILED_IDS, MonitorQueries.FAILED: OverviewQueries.statusTerm's literal condition for failed items"),
      Map.entry("statusTerm(WorkStatus.COMPLETED)",
          "Purges.COMPLETED_BEFORE: OverviewQueries.statusTerm's literal condition for completed items"),
      Map.entry("capLimit",
          "OverviewQueries.countsOf: a long, the validated cap plus one, written as a LIMIT literal so that the plan can be reused"),
      Map.entry("STATUSES[alias] == WorkStatus.IN_PROGRESS ? beforeLeased : before",
          "OverviewQueries.newestOfEachStatus: one of the literals \" AND +id < ?\", \" AND id < ?\" or \"\""),
      Map.entry("COMPLETED_BEFORE",
          "Purges constant: the completed-before-an-instant condition of the retention purge"),
      Map.entry("UNFINISHED",
          "Purges constant: the pending-or-in-progress condition, one term per index"),
      Map.entry("FIRST_QUEUES",
          "OverviewQueries constant: the first queue of each dashboard index"),
      Map.entry("NEXT_QUEUES",
          "OverviewQueries constant: the next queue of each dashboard index"),
      Map.entry("where",
          "OverviewQueries.list: every caller passes a literal condition"),
      Map.entry("order",
          "OverviewQueries.list: every caller passes a literal order"));

  private static final Pattern SQL_WORD = Pattern.compile(
      "\\b(SELECT|INSERT INTO|UPDATE|DELETE FROM|WHERE|AND|ORDER BY|LIMIT|PRAGMA|FOR UPDATE|VALUES|SET)\\b");
  private static final String LITERAL = "\"(?:[^\"\\\\]|\\\\.)*\"";
  /** A ternary choosing between literals (already replaced by L) or the reviewed engine constant. */
  private static final Pattern LITERAL_TERNARY =
      Pattern.compile("[^?]*\\?\\s*(L|engine\\.skipLocked\\(\\))\\s*:\\s*(L|engine\\.skipLocked\\(\\))");

  @Test
  void sqlTextIsNeverConcatenatedWithARuntimeValue() throws IOException {
    Path root = Paths.get("src/main/java/dev/tether/jdbc");
    assertThat(root).isDirectory();
    List<String> findings = new ArrayList<>();
    Map<String, Integer> reviewedUses = new TreeMap<>();
    int sqlLiterals = 0;
    try (Stream<Path> files = Files.walk(root)) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
        String src = stripComments(Files.readString(f));
        // Statements: split at ';' outside literals is good enough for this code base's style.
        for (String stmt : statements(src)) {
          if (!containsSqlLiteral(stmt)) {
            continue;
          }
          sqlLiterals++;
          for (String operand : nonLiteralOperands(stmt)) {
            if (REVIEWED.containsKey(operand)) {
              reviewedUses.merge(operand, 1, Integer::sum);
            } else if (!LITERAL_TERNARY.matcher(operand).matches()) {
              String text = stmt.strip().replaceAll("\\s+", " ");
              findings.add(f.getFileName() + ": '" + operand + "' in: "
                  + text.substring(0, Math.min(200, text.length())));
            }
          }
        }
      }
    }
    assertThat(sqlLiterals).as("statements with SQL found (the scan works)").isGreaterThan(30);
    assertThat(reviewedUses).as("the reviewed operands are really there").containsOnlyKeys(REVIEWED.keySet());
    assertThat(findings).as("SQL concatenated with an unreviewed runtime value").isEmpty();
  }

  @Test
  void theScannerFlagsAConcatenatedQueueName() {
    String bad = "String sql = \"SELECT id FROM tether_work_items WHERE queue = '\" + queue + \"'\";";
    assertThat(containsSqlLiteral(bad)).isTrue();
    assertThat(nonLiteralOperands(bad)).containsExactly("queue");
    String appended = "sql.append(\" AND queue = '\" + queue + \"'\");";
    assertThat(nonLiteralOperands(appended)).containsExactly("queue");
    String reviewed = "sql.append(engine.skipLocked());";
    assertThat(nonLiteralOperands(reviewed)).containsExactly("engine.skipLocked()");
    String good = "String sql = \"SELECT id FROM tether_work_items WHERE status = 'x'\" + (queue != null ? \" AND queue = ?\" : \"\");";
    assertThat(nonLiteralOperands(good)).allMatch(o -> LITERAL_TERNARY.matcher(o).matches());
  }

  /** Removes comments and char literals, keeping string literals intact. */
  static String stripComments(String src) {
    StringBuilder out = new StringBuilder();
    int i = 0;
    while (i < src.length()) {
      char ch = src.charAt(i);
      if (ch == '"') {
        int j = i + 1;
        while (j < src.length() && src.charAt(j) != '"') {
          j += src.charAt(j) == '\\' ? 2 : 1;
        }
        out.append(src, i, Math.min(j + 1, src.length()));
        i = j + 1;
      } else if (ch == '\'') {
        int j = src.indexOf('\'', i + (src.charAt(i + 1) == '\\' ? 3 : 2));
        out.append("'c'");
        i = j + 1;
      } else if (src.startsWith("//", i)) {
        i = src.indexOf('\n', i);
        if (i < 0) {
          break;
        }
      } else if (src.startsWith("/*", i)) {
        i = src.indexOf("*/", i) + 2;
      } else {
        out.append(ch);
        i++;
      }
    }
    return out.toString();
  }

  static List<String> statements(String src) {
    List<String> out = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    boolean inString = false;
    boolean inChar = false;
    for (int i = 0; i < src.length(); i++) {
      char ch = src.charAt(i);
      cur.append(ch);
      if (ch == '\\' && (inString || inChar) && i + 1 < src.length()) {
        cur.append(src.charAt(++i));
        continue;
      }
      if (ch == '"' && !inChar) {
        inString = !inString;
      } else if (ch == '\'' && !inString) {
        inChar = !inChar;
      } else if ((ch == ';' || ch == '{' || ch == '}') && !inString && !inChar) {
        out.add(cur.toString());
        cur.setLength(0);
      }
    }
    return out;
  }

  static boolean containsSqlLiteral(String stmt) {
    Matcher m = Pattern.compile(LITERAL).matcher(stmt);
    while (m.find()) {
      if (SQL_WORD.matcher(m.group()).find()) {
        return true;
      }
    }
    return stmt.contains("sql.append(");
  }

  /**
   * Operands of every '+' in the statement, and arguments of {@code append(...)}, that are not
   * string literals (literals are first replaced by the token {@code L}).
   */
  static List<String> nonLiteralOperands(String stmt) {
    String s = stmt.replaceAll("//[^\n]*", "").replaceAll(LITERAL, "L");
    List<String> out = new ArrayList<>();
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) != '+' || (i + 1 < s.length() && s.charAt(i + 1) == '+')
          || (i > 0 && s.charAt(i - 1) == '+')) {
        continue;
      }
      addOperand(out, left(s, i));
      addOperand(out, right(s, i));
    }
    Matcher app = Pattern.compile("\\.append\\(").matcher(s);
    while (app.find()) {
      int close = matching(s, app.end() - 1);
      String arg = s.substring(app.end(), close).strip();
      if (!arg.contains("+")) {
        addOperand(out, arg);
      }
    }
    return out;
  }

  private static void addOperand(List<String> out, String operand) {
    String t = operand.strip();
    while (t.startsWith("(") && matching(t, 0) == t.length() - 1) {
      t = t.substring(1, t.length() - 1).strip();
    }
    if (t.equals("L") || t.isEmpty() || out.contains(t)) {
      return;
    }
    out.add(t);
  }

  private static String left(String s, int plus) {
    int depth = 0;
    int i = plus - 1;
    for (; i >= 0; i--) {
      char ch = s.charAt(i);
      if (ch == ')') {
        depth++;
      } else if (ch == '(') {
        if (depth == 0) {
          break;
        }
        depth--;
      } else if (depth == 0 && "+,=;?:{}".indexOf(ch) >= 0) {
        break;
      } else if (depth == 0 && s.startsWith("return", i)) {
        i += 5;
        break;
      }
    }
    return s.substring(i + 1, plus);
  }

  private static String right(String s, int plus) {
    int depth = 0;
    int i = plus + 1;
    for (; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch == '(') {
        depth++;
      } else if (ch == ')') {
        if (depth == 0) {
          break;
        }
        depth--;
      } else if (depth == 0 && "+,;?:{}".indexOf(ch) >= 0) {
        break;
      }
    }
    return s.substring(plus + 1, i);
  }

  private static int matching(String s, int open) {
    int depth = 0;
    for (int i = open; i < s.length(); i++) {
      if (s.charAt(i) == '(') {
        depth++;
      } else if (s.charAt(i) == ')' && --depth == 0) {
        return i;
      }
    }
    return s.length() - 1;
  }
}
